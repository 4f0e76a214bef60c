// The SHA-256 of a large local file (--image-file, gigabytes; the agents
// uploaded over SSH, 6 MB each and hashed at every launch before) remembered
// between jobs, so that launching again does not read the whole file again.
// An entry is trusted only while the file's device, inode, size, mtime and
// ctime are all the same (any write changes the ctime, which no user can set
// back). Entries live in $XDG_CACHE_HOME/dlaunch/digests, else
// ~/.cache/dlaunch/digests, one small file per path; a cache that cannot be
// read or written only costs the hashing.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

namespace dlaunch {

// Empty without a home directory: nothing is remembered then.
std::string digest_cache_directory();

// `st`: the file's fstat, taken on the descriptor that is hashed.
std::optional<std::string> cached_digest(const std::string& path, const struct stat& st);
void remember_digest(const std::string& path, const struct stat& st, const std::string& digest);

// The SHA-256 of the file `path` names, followed through symbolic links (an
// image or a packaged agent is often reached through one): the remembered one
// while the file is still the one `st` describes (its stat or fstat), else
// read and remembered. nullopt, with errno set, when it cannot be read.
std::optional<std::string> file_digest(const std::string& path, const struct stat& st);

}  // namespace dlaunch
