// libFuzzer target: every host-list parser on the same input: the TOML hosts
// file, a DeepSpeed/MPI hostfile, Horovod's -H, --include/--exclude, Slurm's
// hostlist expressions and task counts, and --env-file. Invariants: no crash
// or sanitizer report; a failure always comes with a diagnostic that names its
// source; every host found has a name and an address.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "launcher/config/environment.h"
#include "launcher/hosts/host_list.h"
#include "launcher/hosts/hosts_file.h"
#include "launcher/hosts/slurm_hosts.h"

namespace {

// `source`: the name every diagnostic must carry; empty: any.
void check(const dlaunch::HostsFileResult& result, const std::string& source) {
  if (!result) {
    if (result.error().empty()) std::abort();
    for (const auto& d : result.error()) {
      if ((!source.empty() && d.file != source) || d.message.empty()) std::abort();
    }
    return;
  }
  for (const auto& host : result->hosts) {
    if (host.address.empty() || host.name.empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check(dlaunch::parse_hosts_file(text, "fuzz.toml"), "fuzz.toml");
  check(dlaunch::parse_hostfile(text, "fuzz.hostfile"), "fuzz.hostfile");
  const auto from_arg = dlaunch::parse_host_arg(text);
  if (from_arg) {
    // The same text as --include and --exclude against the hosts it named.
    check(dlaunch::filter_hosts(*from_arg, text, ""), "");
    check(dlaunch::filter_hosts(*from_arg, "", text), "");
  }
  const auto names = dlaunch::expand_hostlist(text, 10'000);
  if (names.hosts.size() > 10'000) std::abort();
  for (const auto& n : names.hosts) {
    if (n.empty()) std::abort();
  }
  const auto counts = dlaunch::expand_tasks_per_node(text, 10'000);
  for (int c : counts.counts) {
    if (c < 1) std::abort();
  }
  const auto env = dlaunch::parse_env_file(text, "fuzz.env");
  if (!env && env.error().empty()) std::abort();
  return 0;
}
