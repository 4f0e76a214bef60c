#include "launcher/web/ui_access.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("--listen: address and port, IPv6 in brackets, the default port, errors named") {
  CHECK(parse_listen_address("127.0.0.1:9000")->port == 9000);
  CHECK(parse_listen_address("0.0.0.0:0")->host == "0.0.0.0");
  CHECK(parse_listen_address("localhost")->port == kDefaultUiPort);
  CHECK(parse_listen_address(":9001")->host == "127.0.0.1");
  CHECK(parse_listen_address("[::1]:9002")->host == "::1");
  CHECK(parse_listen_address("[::1]:9002")->port == 9002);
  CHECK(parse_listen_address("::1").error().find("[ADDR]:PORT") != std::string::npos);
  CHECK(parse_listen_address("h:70000").error() == "--listen 'h:70000': the port must be 0-65535");
  CHECK(!parse_listen_address("h:x").ok());
  CHECK(!parse_listen_address("[::1]x").ok());
}

TEST_CASE("loopback: 127/8, ::1 and localhost only") {
  CHECK(is_loopback_host("127.0.0.1"));
  CHECK(is_loopback_host("127.3.2.1"));
  CHECK(is_loopback_host("::1"));
  CHECK(is_loopback_host("localhost"));
  CHECK_FALSE(is_loopback_host("0.0.0.0"));
  CHECK_FALSE(is_loopback_host("198.18.0.1"));
  CHECK_FALSE(is_loopback_host("localhost.attacker.example"));
}

TEST_CASE("access: a token by header, cookie or query; without a token, loopback Host names") {
  const std::string token = "0123456789abcdef0123";
  CHECK(request_access(token, "", "", "", "h") == Access::no_token);
  CHECK(request_access(token, "Bearer " + token, "", "", "h") == Access::granted);
  CHECK(request_access(token, "Bearer " + token + "x", "", "", "h") == Access::no_token);
  CHECK(request_access(token, "Basic " + token, "", "", "h") == Access::no_token);
  CHECK(request_access(token, "", "a=1; dlaunch_token=" + token + "; b=2", "", "h") ==
        Access::granted);
  CHECK(request_access(token, "", "dlaunch_token=wrong", "", "h") == Access::no_token);
  CHECK(request_access(token, "", "", token, "h") == Access::granted);
  CHECK(request_access("", "", "", "", "127.0.0.1:8697") == Access::granted);
  CHECK(request_access("", "", "", "", "localhost:8080") == Access::granted);
  CHECK(request_access("", "", "", "", "[::1]:8697") == Access::granted);
  CHECK(request_access("", "", "", "", "attacker.example:8697") == Access::wrong_host);
  CHECK(request_access("", "", "", "", "") == Access::wrong_host);
  CHECK(same_secret("abc", "abc"));
  CHECK_FALSE(same_secret("abc", "abd"));
  CHECK_FALSE(same_secret("abc", "abcd"));
  CHECK_FALSE(same_secret("", "a"));
}
