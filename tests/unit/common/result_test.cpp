// Result<T>, the one way a fallible function says it failed (common/README.md).
#include "common/result.h"

#include <doctest/doctest.h>

#include <string>

using namespace dlaunch;

namespace {

Result<int> parse_port(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return fail("port '" + text + "': expected a number");
  return std::stoi(text);
}

Result<void> check_even(int n) {
  if (n % 2) return fail(std::to_string(n) + " is odd");
  return {};
}

}  // namespace

TEST_CASE("result: a value or the message of why there is none") {
  const auto port = parse_port("29500");
  REQUIRE(port);
  CHECK(*port == 29500);
  const auto bad = parse_port("29x");
  CHECK_FALSE(bad);
  CHECK(bad.error() == "port '29x': expected a number");
}

TEST_CASE("result: a check with nothing to give back is ok or says why not") {
  CHECK(check_even(4).ok());
  const auto odd = check_even(3);
  CHECK_FALSE(odd);
  CHECK(odd.error() == "3 is odd");
}
