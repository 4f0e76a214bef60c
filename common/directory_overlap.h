// Whether a `--sync` source and the directory it is written into are one
// tree on one machine. A destination that contains the source would have
// --sync-delete remove the source itself (it is not in the offer), and one
// inside the source would take a copy of itself on every run (run/run/run/).
//
// Paths cannot answer this: a symbolic link, a bind mount or "~" spelt two
// ways name one directory differently. The source is named by what the
// kernel calls it (device and inode) and by the machine it is on, so an
// agent on another machine, or in another mount namespace where that path is
// some other directory, finds no overlap.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace dlaunch {

// What tells this machine from every other one running now: /etc/machine-id
// and the kernel's boot id ("<machine-id>/<boot-id>"). Copied VM images may
// share a machine id; the boot id tells them apart. Empty when unreadable.
std::string machine_identity();

struct DirectoryIdentity {
  std::string machine;  // machine_identity() where it was taken
  std::string path;     // absolute
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
};

// The directory at `path` (absolute) on this machine; an error names it.
Result<DirectoryIdentity> identify_directory(const std::string& path);

enum class Overlap { none, same, dest_inside_source, source_inside_dest };

// How `dest`, a directory on this machine, lies to `source`. None when the
// source was taken on another machine or its path here is another directory.
Overlap directory_overlap(const DirectoryIdentity& source, const std::string& dest);

// The refusal for an overlap other than none, naming both directories and
// what to do: "--sync /p/src would be written into /p, which holds it: ..."
std::string describe_overlap(Overlap overlap, const std::string& source, const std::string& dest);

}  // namespace dlaunch
