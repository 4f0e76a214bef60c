// `--sync DIR`: what the directory holds, as the offer to every agent lists
// it. Built once, before any agent starts: walks DIR without following
// symbolic links, skips what the ignore rules match (`.git`, `.dlaunchignore`;
// see transfer/sync_ignore.h) and records each entry's kind, mode bits, size,
// SHA-256 (files) and target (symlinks). Sockets, FIFOs and devices are
// skipped and counted. Entries come in walk order, names sorted within each
// directory, so that a directory comes before what it holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/directory_overlap.h"
#include "common/result.h"
#include "protocol/messages.h"

namespace dlaunch {

struct SyncManifest {
  std::string root;  // DIR, absolute
  // A manifest of one file read from here whatever its entry is named
  // (--image-file, launcher/sync/image_file.h); empty for a directory's.
  std::string source_file = {};
  // A directory's, for the agents to refuse a destination that overlaps it
  // (common/directory_overlap.h); empty machine for a file's manifest.
  DirectoryIdentity source = {};
  std::vector<proto::SyncEntry> entries = {};
  std::vector<std::string> ignore = {};  // the rules' lines, for the agents
  std::uint64_t files = 0;               // regular files among the entries
  std::uint64_t bytes = 0;               // their total size
  std::uint64_t ignored = 0;             // entries the rules skipped (a directory counts once)
  std::uint64_t special = 0;             // sockets, FIFOs, devices: not synced
};

// `hash`: false leaves sha256 empty (--dry-run only counts). An error names
// the path and the reason.
Result<SyncManifest> build_sync_manifest(const std::string& dir, bool hash = true);

// "12 files, 3 symlinks, 4 directories, 1.5 MiB; 7 ignored"
std::string describe_manifest(const SyncManifest& manifest);
// "1.5 MiB", "812 B"
std::string human_bytes(std::uint64_t bytes);

}  // namespace dlaunch
