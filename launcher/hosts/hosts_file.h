// The TOML hosts file: [defaults], [[host]] tables and [rendezvous]. The loader
// is pure (text in, value or diagnostics out) so that every error case is a unit
// test; see hosts.example.toml for the documented schema.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/hosts/diagnostic.h"

#include "common/result.h"

namespace dlaunch {

// How a host's agent starts. `slurm`: as a task of the coordinator's srun job
// step (launcher/transport/slurm_transport.h); only Slurm's own host list
// sets it, a hosts file cannot.
enum class TransportKind { automatic, local, ssh, slurm };

struct HostEntry {
  std::string name;         // defaults to address
  std::string address;      // host name or IP; also an ~/.ssh/config Host alias
  std::optional<int> port;  // SSH port
  std::string user;         // SSH user; empty: ~/.ssh/config or the local user
  std::string identity;     // SSH private key path; `~/` expanded by the SSH transport
  // Jump hosts, "user@host:port,..." (ssh/jump_spec.h); "none": connect
  // directly even when ~/.ssh/config has a ProxyJump; empty: as ~/.ssh/config says.
  std::string jump;
  std::optional<int> slots;                // ranks on this host; unset: one per GPU, else 1
  std::optional<int> gpus;                 // GPUs on this host, when known
  std::string interface;                   // network interface for NCCL/Gloo
  std::string python;                      // the Python for .py programs and -m; empty: python3
  std::string image;                       // ranks run in containers of it; empty: --image's
  std::map<std::string, std::string> env;  // extra environment for the host's ranks
  // "--include" or "--exclude" when that flag set env's CUDA_VISIBLE_DEVICES.
  std::string visible_devices_by;
  TransportKind transport = TransportKind::automatic;
  // Runs ranks only in place of a lost node (launcher/fleet/membership.h).
  bool spare = false;
  int line = 0;  // where the [[host]] table starts, for messages

  bool operator==(const HostEntry&) const = default;
};

// One TOML value being read, with where to report what is wrong with it;
// defined by the loader.
struct HostFieldInput;

// One per-host key of [[host]] and [defaults]. The loader's table of them is
// the only list of host keys: parsing both sections, did-you-mean suggestions,
// the top-level "goes in [defaults]" hint and validation all read it, so a new
// key is a HostEntry member and one row.
struct HostField {
  enum class Scope {
    host_only,          // identifies a host: [defaults] refuses it
    host_and_defaults,  // [defaults] sets it for every host that does not
  };
  std::string_view name;
  Scope scope;
  // A valid TOML value, for documentation and for the test that every row
  // is accepted and lands in HostEntry.
  std::string_view example;
  // Checks type and range, reporting problems to the input's diagnostics, and
  // stores a good value in its HostEntry member.
  void (*read)(const HostFieldInput& input, HostEntry& entry);
  // What the key becomes when neither [[host]] nor [defaults] set it;
  // nullptr: HostEntry's initial value above.
  void (*default_when_unset)(HostEntry& entry) = nullptr;
};

// The rows, in the order suggestions prefer them.
std::span<const HostField> host_fields();

struct RendezvousSettings {
  std::string address;      // what agents connect to; empty: derived per host
  std::optional<int> port;  // listening port; unset: any free port
  // MASTER_ADDR to try first (node 0's address as every node reaches it, e.g.
  // across a tunnel); it is probed like the others and used when all reach it.
  std::string master_address;
  std::uint32_t master_address_line = 0;  // for messages
  // via = "ssh": each SSH host's agent reaches the rendezvous through a
  // reverse forward on its own SSH connection (coordinator behind NAT).
  bool via_ssh = false;
};

struct HostsFile {
  std::string path;  // or "-H", "SLURM_JOB_NODELIST": where the hosts came from
  std::vector<HostEntry> hosts;
  RendezvousSettings rendezvous;
  // What was accepted but is worth a word (a key that is read and ignored);
  // the caller prints them.
  std::vector<Diagnostic> warnings = {};
};

// A host list, or every problem found in it (common/result.h).
using HostsFileResult = Result<HostsFile, std::vector<Diagnostic>>;

// Far above any real machine, low enough that a typo (slots = 80000) is an
// error instead of a fork storm on the host. Every host source keeps to it.
inline constexpr int kMaxSlots = 4096;

// Why `text` cannot be handed to ssh or the resolver as one host or user
// name, or an empty string when it can: a leading '-' would be read as an
// option, whitespace splits words on the remote side, control and
// text-direction characters print as something else.
std::string unsafe_word_reason(std::string_view text);

// Values are echoed in messages: `text` in single quotes on one printable
// line, control characters escaped, cut after 64 bytes.
std::string echo_quoted(std::string_view text);

// The text of a host-list file (TOML or not); a missing, unreadable or
// oversized file is one diagnostic naming it.
Result<std::string, Diagnostic> read_host_list_file(const std::string& path);

// Parses the text of a hosts file; `path` is used in diagnostics only.
HostsFileResult parse_hosts_file(const std::string& text, const std::string& path);
// Reads and parses a file; a missing or unreadable file is one diagnostic.
HostsFileResult load_hosts_file(const std::string& path);

// True when a host is started without SSH: transport "local", or "automatic"
// with a loopback address and no port.
bool is_local_host(const HostEntry& host);

}  // namespace dlaunch
