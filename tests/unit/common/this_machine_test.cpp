#include "common/this_machine.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace dlaunch;

TEST_CASE("which address names this machine") {
  const std::vector<std::string> local{"10.0.0.5", "fd00::5"};
  CHECK(names_this_machine("localhost", "n1", {}, local));
  CHECK(names_this_machine("N1", "n1.example", {}, local));
  CHECK(names_this_machine("n1.example", "n1.example", {}, local));
  CHECK(names_this_machine("head", "n1", {"10.0.0.5"}, local));
  CHECK(names_this_machine("n1-alias", "n1", {"127.0.1.1"}, local));
  CHECK_FALSE(names_this_machine("head", "n1", {"10.0.0.6"}, local));
  CHECK_FALSE(names_this_machine("n2", "n1", {}, local));
}

TEST_CASE("is_this_host_name: loopback spellings and the host's name or first label, any case") {
  for (const char* host :
       {"localhost", "LocalHost", "127.0.0.1", "::1", "n1", "N1", "n1.example", "N1.Example"})
    CHECK(is_this_host_name(host, "n1.example"));
  // No lookup: an address of this machine's is not told by its spelling.
  for (const char* host : {"", "n2", "n1.other", "n", "example", "10.0.0.5", "127.0.1.1"})
    CHECK_FALSE(is_this_host_name(host, "n1.example"));
  CHECK_FALSE(is_this_host_name("", ""));
  CHECK_FALSE(is_this_host_name("n1", ""));
}
