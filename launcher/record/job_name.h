// What may name a job: the name is its directory under the state dir, and a
// word in `dlaunch get NAME`, so it is a plain file name.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"

namespace dlaunch {

inline constexpr std::size_t kMaxJobName = 200;

// The error says why `name` cannot name a job.
Result<void> check_job_name(const std::string& name);

}  // namespace dlaunch
