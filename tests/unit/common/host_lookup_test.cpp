#include "common/host_lookup.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {
constexpr const char* kHosts =
    "127.0.0.1\tlocalhost\n"
    "# 10.0.0.9 commented\n"
    "198.18.0.2   node1 node1.cluster   # trailing comment\n"
    "198.18.0.3\tnode2\r\n"
    "fd00::4 node4\n"
    "198.18.0.5 NODE5\n"
    "not-an-address node6\n"
    "198.18.0.7 node1\n";
}

TEST_CASE("lookup_in_hosts_text: numeric addresses as they are, names by their lines") {
  CHECK(lookup_in_hosts_text("198.51.100.1", kHosts) == std::vector<std::string>{"198.51.100.1"});
  CHECK(lookup_in_hosts_text("2001:db8::1", kHosts) == std::vector<std::string>{"2001:db8::1"});
  CHECK(lookup_in_hosts_text("node2", kHosts) == std::vector<std::string>{"198.18.0.3"});
  CHECK(lookup_in_hosts_text("node1.cluster", kHosts) == std::vector<std::string>{"198.18.0.2"});
  CHECK(lookup_in_hosts_text("node4", kHosts) == std::vector<std::string>{"fd00::4"});
  // Names match without case, as resolvers do; every line of a name counts.
  CHECK(lookup_in_hosts_text("node5", kHosts) == std::vector<std::string>{"198.18.0.5"});
  CHECK(lookup_in_hosts_text("node1", kHosts) ==
        std::vector<std::string>{"198.18.0.2", "198.18.0.7"});
}

TEST_CASE("lookup_in_hosts_text: no answer for comments, bad lines and unknown names") {
  CHECK(lookup_in_hosts_text("commented", kHosts).empty());
  CHECK(lookup_in_hosts_text("node6", kHosts).empty());
  CHECK(lookup_in_hosts_text("node", kHosts).empty());
  CHECK(lookup_in_hosts_text("", kHosts).empty());
  CHECK(lookup_in_hosts_text("node2", "").empty());
  CHECK(lookup_failure("db.example").find("db.example") != std::string::npos);
}

TEST_CASE("is_numeric_address") {
  CHECK(is_numeric_address("10.1.2.3"));
  CHECK(is_numeric_address("::1"));
  CHECK_FALSE(is_numeric_address("10.1.2"));
  CHECK_FALSE(is_numeric_address("host"));
  CHECK_FALSE(is_numeric_address("[::1]"));
}

TEST_CASE("home_from_passwd_text: the entry of the uid, not of a name or a gid") {
  const char* passwd =
      "root:x:0:0:root:/root:/bin/bash\n"
      "user1000:x:1001:1000:gid is 1000:/home/not-this:/bin/sh\n"
      "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
      "broken line\n";
  CHECK(home_from_passwd_text(0, passwd) == "/root");
  CHECK(home_from_passwd_text(1000, passwd) == "/home/alice");
  CHECK(home_from_passwd_text(4242, passwd).empty());
  CHECK(home_from_passwd_text(0, "").empty());
}
