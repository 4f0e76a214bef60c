#include "common/address.h"

#include <algorithm>
#include <cctype>

namespace dlaunch {

bool is_loopback_address(std::string_view address) {
  constexpr std::string_view kLocalhost = "localhost";
  const bool localhost = std::ranges::equal(address, kLocalhost, [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return localhost || address == "127.0.0.1" || address == "::1";
}

}  // namespace dlaunch
