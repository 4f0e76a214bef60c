#include <doctest/doctest.h>

#include "ssh/jump_spec.h"

using namespace dlaunch;

namespace {

std::vector<JumpHop> hops(std::string_view text) {
  const JumpChain chain = parse_jump_chain(text);
  INFO(text, ": ", chain.error);
  CHECK(chain.error.empty());
  return chain.hops;
}

std::string error_of(std::string_view text) {
  const JumpChain chain = parse_jump_chain(text);
  CHECK(chain.hops.empty());
  return chain.error;
}

}  // namespace

TEST_CASE("jump chain: user and port are optional") {
  CHECK(hops("bastion") == std::vector<JumpHop>{{"", "bastion", std::nullopt}});
  CHECK(hops("admin@bastion") == std::vector<JumpHop>{{"admin", "bastion", std::nullopt}});
  CHECK(hops("bastion:2222") == std::vector<JumpHop>{{"", "bastion", 2222}});
  CHECK(hops("admin@198.18.0.1:22") == std::vector<JumpHop>{{"admin", "198.18.0.1", 22}});
}

TEST_CASE("jump chain: two hops, first hop first") {
  CHECK(hops("a@outer:2200,inner") ==
        std::vector<JumpHop>{{"a", "outer", 2200}, {"", "inner", std::nullopt}});
}

TEST_CASE("jump chain: IPv6 addresses in brackets") {
  CHECK(hops("[2001:db8::1]:2222") == std::vector<JumpHop>{{"", "2001:db8::1", 2222}});
  CHECK(hops("u@[fe80::1%eth0]") == std::vector<JumpHop>{{"u", "fe80::1%eth0", std::nullopt}});
  CHECK(error_of("2001:db8::1").find("brackets") != std::string::npos);
  CHECK(!error_of("[2001:db8::1").empty());
  CHECK(!error_of("[2001:db8::1]x").empty());
  CHECK(!error_of("[]:22").empty());
}

TEST_CASE("jump chain: none means no jump host") {
  const JumpChain chain = parse_jump_chain("none");
  CHECK(chain.error.empty());
  CHECK(chain.hops.empty());
}

TEST_CASE("jump chain: mistakes are named with their hop") {
  CHECK(error_of("").find("empty") != std::string::npos);
  CHECK(error_of("a,,b") == "hop 2: an empty hop (two commas, or a comma at an end)");
  CHECK(error_of("a,") == "hop 2: an empty hop (two commas, or a comma at an end)");
  CHECK(error_of("@host") == "hop 1: no user before '@'");
  CHECK(error_of("u@") == "hop 1: no host name");
  CHECK(error_of("host:") == "hop 1: no port after ':'");
  CHECK(error_of("host:0") == "hop 1: port '0' is not a number from 1 to 65535");
  CHECK(error_of("host:65536").find("65535") != std::string::npos);
  CHECK(error_of("host:22x").find("22x") != std::string::npos);
  CHECK(error_of("ok,-oProxyCommand=x") == "hop 2: host '-oProxyCommand=x' starts with '-'");
  CHECK(error_of("bad host").find("character") != std::string::npos);
  CHECK(error_of("a b@host").find("space") != std::string::npos);
  CHECK(error_of("h/x").find("character") != std::string::npos);
}

TEST_CASE("jump chain: at most kMaxJumpHops hops") {
  std::string text = "h";
  for (std::size_t i = 1; i < kMaxJumpHops; ++i) text += ",h";
  CHECK(hops(text).size() == kMaxJumpHops);
  CHECK(error_of(text + ",h").find("more than") != std::string::npos);
}

TEST_CASE("jump chain: hops print as written") {
  CHECK(to_string(JumpHop{"u", "b", 2}) == "u@b:2");
  CHECK(to_string(JumpHop{"", "b", std::nullopt}) == "b");
  CHECK(to_string(JumpHop{"", "2001:db8::1", 22}) == "[2001:db8::1]:22");
}
