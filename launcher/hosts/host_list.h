// Host lists in the forms other launchers take, read into the same HostsFile
// and HostEntry values as the TOML hosts file, so the planner sees no
// difference. Pure: text in, hosts or diagnostics (source and line) out.
//
// DeepSpeed/MPI hostfile (--hostfile F), one host per line:
//
//   worker-1 slots=4      # a trailing comment
//   worker-2 slots=4 max_slots=8
//   worker-3              # no slots: one rank per GPU, else 1
//
// '#' starts a comment, blank lines are skipped. `max_slots` is accepted for
// MPI's sake and ignored (one warning per file, naming its first line); any
// other key, a value that is not a count from 1 to kMaxSlots, a host named
// twice or an unsafe host name is an error naming F:LINE:COLUMN.
//
// Horovod's -H: "host1:4,host2:4,host3" (no ":N": slots unset).
//
// DeepSpeed's --include / --exclude: "host1:0,1@host2" names hosts separated
// by '@', each with an optional list of GPU indices after ':'.
//   --include keeps only the named hosts; with indices, only those GPUs: the
//     host's slots become their count and its ranks get
//     CUDA_VISIBLE_DEVICES=<indices, as given>.
//   --exclude drops the named hosts; with indices, only those GPUs, out of
//     the host's GPU count (its `gpus`, else its `slots`: a hostfile's slots=N
//     is its GPU count, as for DeepSpeed), which must then be known. A host
//     left with no GPU is dropped.
// A name that is not in the host list, an index at or beyond a known GPU
// count, a host or index named twice, and a host whose env already sets
// CUDA_VISIBLE_DEVICES when indices are given are errors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/hosts/hosts_file.h"

namespace dlaunch {

// Parses the text of a hostfile; `path` is used in diagnostics and as the
// HostsFile's path. Each host's line is its line in the file.
HostsFileResult parse_hostfile(const std::string& text, const std::string& path);
// Reads and parses a hostfile; a missing or unreadable file is one diagnostic.
HostsFileResult load_hostfile(const std::string& path);

// Parses -H's value. Diagnostics and the HostsFile's path are "-H"; each
// host's line is its position in the list (1-based).
HostsFileResult parse_host_arg(std::string_view text);

// One host of --include or --exclude; empty `gpus`: the whole host.
struct HostFilterItem {
  std::string host;
  std::vector<int> gpus;

  bool operator==(const HostFilterItem&) const = default;
};

// "host1:0,1@host2" -> {host1, {0, 1}}, {host2, {}}; `flag` ("--include")
// names the diagnostics' source.
Result<std::vector<HostFilterItem>, Diagnostic> parse_host_filter(std::string_view text,
                                                                  std::string_view flag);

// Applies --include or --exclude, whichever is not empty, to `hosts`, keeping
// the hosts' order. Giving both is an error, as it is for DeepSpeed; so is a
// filter that leaves no host.
HostsFileResult filter_hosts(HostsFile hosts, std::string_view include, std::string_view exclude);

}  // namespace dlaunch
