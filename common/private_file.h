// A small file written whole or not at all: into a hidden temporary file
// (mode 0600) beside it, flushed, renamed into place and the directory
// flushed, so that a reader (another process, or this host after a crash)
// sees the old content or the new, never a part. The job record, the image
// file digests and the image cache's notes are written this way.
#pragma once

#include <string>

#include "common/result.h"

namespace dlaunch {

// `dir/name` holds `content` afterwards; an error names the path and the step.
Result<void> write_private_file(const std::string& dir, const std::string& name,
                                const std::string& content);

}  // namespace dlaunch
