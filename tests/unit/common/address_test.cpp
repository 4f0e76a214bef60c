#include <doctest/doctest.h>

#include "common/address.h"

using namespace dlaunch;

TEST_CASE("is_loopback_address: the three spellings of this machine") {
  for (const char* address : {"localhost", "LocalHost", "LOCALHOST", "127.0.0.1", "::1"}) {
    CAPTURE(address);
    CHECK(is_loopback_address(address));
  }
}

TEST_CASE("is_loopback_address: everything else is reached as written") {
  for (const char* address : {"", "10.0.0.1", "127.0.0.2", "127.1", "127.0.0.1.", "0.0.0.0",
                              "::", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1", "localhost.example.com",
                              "localhost.", "localhos", "xlocalhost", " localhost", "[::1]"}) {
    CAPTURE(address);
    CHECK_FALSE(is_loopback_address(address));
  }
}
