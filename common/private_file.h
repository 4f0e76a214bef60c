// A small file written whole or not at all: into a hidden temporary file
// beside it, flushed, renamed into place and the directory flushed, so that a
// reader (another process, or this host after a crash) sees the old content or
// the new, never a part. The job record, the image file digests and the image
// cache's notes are written this way (0600), and `dlaunch metrics -o` for
// node_exporter, which runs as another user (0644).
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace dlaunch {

// `dir/name` holds `content` afterwards; an error names the path and the step.
Result<void> write_private_file(const std::string& dir, const std::string& name,
                                const std::string& content);
// The same with the file's mode given.
Result<void> write_file_whole(const std::string& dir, const std::string& name,
                              const std::string& content, mode_t mode);

}  // namespace dlaunch
