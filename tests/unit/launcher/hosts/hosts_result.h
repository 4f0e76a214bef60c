// The hosts of a HostsFileResult that must have parsed; a test that gets
// diagnostics instead fails, showing each.
#pragma once

#include <doctest/doctest.h>

#include <utility>
#include <variant>
#include <vector>

#include "launcher/hosts/hosts_file.h"

namespace dlaunch::testing {

inline HostsFile ok(HostsFileResult result) {
  if (!result) {
    for (const auto& d : result.error()) MESSAGE(d.to_string());
    FAIL("expected hosts");
  }
  return std::move(*result);
}

}  // namespace dlaunch::testing
