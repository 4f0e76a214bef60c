// `dlaunch check`'s output: a table with a row per host, the warnings, the
// MASTER_ADDR report, the matrix between every pair of hosts and the verdict;
// or the same content as one JSON document (--json). Pure.
#pragma once

#include <string>

#include "launcher/check/check_result.h"

namespace dlaunch {

std::string format_check_text(const CheckResult& result);
std::string format_check_json(const CheckResult& result);

}  // namespace dlaunch
