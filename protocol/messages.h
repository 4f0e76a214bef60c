// The messages of the rendezvous protocol between coordinator and agents.
//
// Handshake (before anything else is accepted):
//   agent -> Hello{magic, version, agent_nonce}
//   coord -> Challenge{magic, version, server_nonce}
//   agent -> Join{proof = HMAC(secret, "join" | server_nonce | agent_nonce), node facts}
//   coord -> Welcome{proof = HMAC(secret, "welcome" | agent_nonce | server_nonce)}
// Once every node has joined (jobs over more than one machine):
//   coord -> Probe{node 0's candidate addresses, its probe port}
//   agent -> ProbeReport{one outcome per candidate}
// Then, per round: coord -> Assign; agent -> LogLine* RankExit* AgentDone;
// coord -> Stop at any time. Both sides send Heartbeat when otherwise idle.
// `dlaunch check` agents (LaunchSpec::check) get no Assign; instead:
//   coord -> FactsRequest; agent -> HostFacts (its clock read as it answers)
//   coord -> Probe as above; agent -> ProbeReport
//   coord -> PeerTest per round of host pairs; agent -> PeerTestReport
//   coord -> Stop
// --sync, after Welcome and before the Assign (which waits for every node's
// SyncDone): coord -> SyncOffer* (the last one says so); agent -> SyncWant*
// (the last one says so); coord -> SyncData* for each wanted file in the
// order wanted, its chunks in order; agent -> SyncDone. The destination is
// the ranks' working directory as the agent settled it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/directory_overlap.h"
#include "protocol/network_facts.h"

namespace dlaunch::proto {

inline constexpr std::uint32_t kMagic = 0x444C5256;  // "DLRV"
// 2: Join carries nnodes; LogLine says how its text ended.
// 3: Join carries interfaces and a probe port; Probe, ProbeReport; Assign names
//    the interface for NCCL/Gloo.
// 4: FactsRequest, HostFacts, PeerTest, PeerTestReport (dlaunch check).
// 5: FileChunk (--tensorboard-dir).
// 6: SyncOffer, SyncWant, SyncData, SyncDone (--sync).
// 7: NcclTest, NcclReport (dlaunch check --nccl).
// 8: Join carries the machine id; HostFacts the python3's path.
// 9: HostFacts carries the host's architecture and libc, and the agent's
//    architecture (the agent is static: one per architecture).
// 10: FileChunk names its file set (--tensorboard-dir, --checkpoint-dir) and
//     marks the chunk that completes a file; it also goes to agents.
// 11: HostFacts carries the container engine, the image and the --sync-git
//     commit.
// 12: SyncOffer says where its files go: the ranks' working directory
//     (--sync) or the host's image cache (--image-file).
// 13: SyncOffer names its source directory (machine, path, device, inode),
//     so that an agent on that machine refuses a destination overlapping it.
// 14: StacksRequest, StacksReport (`dlaunch stacks`, hung jobs); RankExit
//     carries the rank's TORCHELASTIC_ERROR_FILE exception.
// 15: StacksReport carries the rank's NCCL flight recorder dump.
inline constexpr std::uint16_t kVersion = 15;
inline constexpr std::size_t kNonceSize = 32;
inline constexpr std::size_t kMaxHostName = 255;
inline constexpr std::size_t kMaxMachineId = 128;
inline constexpr std::size_t kMaxLogChunk = 64 * 1024;
// A Stop's reason is for the agents' logs: one line, not a list of nodes.
inline constexpr std::size_t kMaxStopReason = 4096;
// A host with more interfaces or addresses than these (hundreds of container
// veths) reports the first ones; the coordinator needs the real NICs, which
// the agent lists first.
inline constexpr std::size_t kMaxInterfaces = 64;
inline constexpr std::size_t kMaxAddressesPerInterface = 16;
inline constexpr std::size_t kMaxInterfaceName = 15;  // IFNAMSIZ - 1
inline constexpr std::size_t kMaxProbeError = 256;
// HostFacts: short descriptive strings (os-release, uname, NVML names and
// versions, `python3 --version`); longer ones are cut by the agent.
inline constexpr std::size_t kMaxFactText = 256;
inline constexpr std::size_t kMaxGpus = 64;
// --tensorboard-dir: a file's path under the directory, and one chunk of it.
inline constexpr std::size_t kMaxFilePath = 1024;
inline constexpr std::size_t kMaxFileChunk = 256 * 1024;
// --sync: entries per SyncOffer (the sender also keeps each under the frame
// limit), entries in one whole offer (a tree of more files is refused before
// anything is sent), indices per SyncWant (4 bytes each), a symbolic link's
// target (PATH_MAX), the ignore rules (lines, each at most kMaxFilePath).
inline constexpr std::size_t kMaxSyncEntriesPerOffer = 4096;
inline constexpr std::size_t kMaxSyncEntries = 1'000'000;
inline constexpr std::size_t kMaxSyncWant = 65'536;
inline constexpr std::size_t kMaxLinkTarget = 4096;
inline constexpr std::size_t kMaxIgnoreLines = 1024;
// PeerTest: one round gives a host at most this many peers to test.
inline constexpr std::size_t kMaxPeerTargets = 256;
inline constexpr std::int32_t kMaxPeerTestMs = 60'000;
// NcclTest: ncclUniqueId's size, message sizes per test, GPUs per host.
inline constexpr std::size_t kNcclUniqueIdBytes = 128;
inline constexpr std::size_t kMaxNcclSizes = 64;
inline constexpr std::int64_t kMaxNcclBytes = 8LL << 30;

// Each message's wire type and its name (for logs) are the kType and kName
// of its struct below; messages.cpp checks that every type is one struct's.
enum class Type : std::uint8_t {
  hello = 1,
  challenge = 2,
  join = 3,
  welcome = 4,
  assign = 5,
  log_line = 6,
  rank_exit = 7,
  agent_done = 8,
  stop = 9,
  heartbeat = 10,
  reject = 11,
  probe = 12,
  probe_report = 13,
  facts_request = 14,
  host_facts = 15,
  peer_test = 16,
  peer_test_report = 17,
  file_chunk = 18,
  sync_offer = 19,
  sync_want = 20,
  sync_data = 21,
  sync_done = 22,
  nccl_test = 23,
  nccl_report = 24,
  stacks_request = 25,
  stacks_report = 26,
};
// The highest type: decoders and tests bound their ranges with it.
inline constexpr Type kLastType = Type::stacks_report;

struct Hello {
  static constexpr Type kType = Type::hello;
  static constexpr std::string_view kName = "hello";
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::string agent_nonce;
};

struct Challenge {
  static constexpr Type kType = Type::challenge;
  static constexpr std::string_view kName = "challenge";
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::string server_nonce;
};

struct Join {
  static constexpr Type kType = Type::join;
  static constexpr std::string_view kName = "join";
  std::string proof;
  std::int32_t node_rank = -1;
  std::int32_t nproc = 1;  // already resolved by the agent (GPU count when auto)
  std::int32_t gpus = 0;
  std::string host;              // the agent's host name, for messages
  std::int32_t master_port = 0;  // a port that was free on that host just now
  std::int64_t pid = 0;
  std::int32_t nnodes = 0;      // the node count this agent was started for; 0: not given
  std::int32_t probe_port = 0;  // where this agent accepts probes (0: none)
  net::Interfaces interfaces = {};
  // /etc/machine-id and the boot id: two agents with the same one run on one
  // machine (listed twice under two names). Empty: unknown.
  std::string machine_id = {};
};

struct Welcome {
  static constexpr Type kType = Type::welcome;
  static constexpr std::string_view kName = "welcome";
  std::string proof;
};

struct Assign {
  static constexpr Type kType = Type::assign;
  static constexpr std::string_view kName = "assign";
  std::string job;
  std::int32_t round = 0;  // TORCHELASTIC_RESTART_COUNT
  std::int32_t max_restarts = 0;
  std::int32_t node_rank = 0;
  std::int32_t nnodes = 1;
  std::int32_t rank_offset = 0;
  std::int32_t local_world_size = 1;
  std::int32_t world_size = 1;
  std::string master_addr;
  std::int32_t master_port = 0;
  std::string socket_ifname = {};  // this host's interface towards MASTER_ADDR; empty: unknown
};

enum class Stream : std::uint8_t { out = 1, err = 2 };

// How a piece of rank output ended, so the coordinator writes the rank's log
// with exactly the bytes the rank wrote and shows progress bars as they move.
enum class LineEnd : std::uint8_t {
  newline = 0,          // "\n"
  carriage_return = 1,  // "\r": a progress display redrawn in place
  continued = 2,        // no end yet: a piece of a line longer than kMaxLogChunk
  partial = 3,          // no end yet: the rank has written nothing more for a while
};

struct LogLine {
  static constexpr Type kType = Type::log_line;
  static constexpr std::string_view kName = "log_line";
  std::int32_t rank = 0;
  Stream stream = Stream::out;
  std::string text;  // without its end, at most kMaxLogChunk bytes
  LineEnd end = LineEnd::newline;
};

struct RankExit {
  static constexpr Type kType = Type::rank_exit;
  static constexpr std::string_view kName = "rank_exit";
  std::int32_t rank = 0;
  std::int32_t exit_code = 0;  // valid when signal == 0
  std::int32_t signal = 0;
  // The exception a failing rank wrote to TORCHELASTIC_ERROR_FILE (torch's
  // @record): its traceback, the job's root cause as torchrun shows it.
  std::string error = {};
};
inline constexpr std::size_t kMaxRankError = 16 * 1024;

struct AgentDone {
  static constexpr Type kType = Type::agent_done;
  static constexpr std::string_view kName = "agent_done";
  std::int32_t round = 0;
  std::int32_t next_master_port = 0;  // a fresh free port for a restart round
};

struct Stop {
  static constexpr Type kType = Type::stop;
  static constexpr std::string_view kName = "stop";
  std::int32_t exit_code = 0;  // the job's result, for agents that report it locally
  bool restart = false;        // stop this round only; another Assign follows
  std::int32_t grace_s = -1;   // >= 0: overrides the agent's grace (0: kill now)
  std::string reason;
};

// Try a TCP connection to each address at node 0's probe port.
struct Probe {
  static constexpr Type kType = Type::probe;
  static constexpr std::string_view kName = "probe";
  std::int32_t port = 0;
  std::int32_t timeout_ms = 3000;
  std::vector<std::string> addresses;  // at most net::kMaxCandidates
};

struct ProbeReport {
  static constexpr Type kType = Type::probe_report;
  static constexpr std::string_view kName = "probe_report";
  std::vector<net::ProbeOutcome> outcomes;  // one per Probe address, in order
};

// dlaunch check: what the host offers a job. The agent collects it before it
// joins and answers FactsRequest at once, so the coordinator can read the
// agent's clock against its own with the exchange's round trip as the bound.
struct FactsRequest {
  static constexpr Type kType = Type::facts_request;
  static constexpr std::string_view kName = "facts_request";
};

struct GpuFact {
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::uint64_t memory_used_bytes = 0;
  std::int32_t utilization_pct = -1;  // -1: unknown
  // The dlaunch job whose rank holds this GPU (by its CUDA_VISIBLE_DEVICES
  // and LOCAL_RANK); empty: none.
  std::string held_by_job = {};
};

struct HostFacts {
  static constexpr Type kType = Type::host_facts;
  static constexpr std::string_view kName = "host_facts";
  std::string agent_version;
  std::string os;      // PRETTY_NAME of /etc/os-release; empty: unknown
  std::string kernel;  // uname -r
  std::int32_t cpus = 0;
  std::vector<GpuFact> gpus;   // from NVML; empty without it
  std::string driver_version;  // NVML's; empty without NVML
  std::string cuda_version;    // the driver's CUDA version, "12.4"; empty without NVML
  // Bytes; -1: unknown (statvfs failed).
  std::int64_t home_free = -1;
  std::int64_t tmp_free = -1;
  std::int64_t shm_size = -1;
  std::int64_t wall_clock_us = 0;  // the host's time of day as it answered FactsRequest
  std::string python_version;      // python3 on PATH; empty: none
  std::string torch_version;       // torch importable by that python3; empty: none
  std::string python_path;         // that python3's sys.executable; empty: none
  std::string arch;                // the host's `uname -m`
  std::string libc;                // "glibc 2.31", "musl"; empty: none found (the agent needs none)
  std::string agent_arch;          // the architecture the agent that answered was built for
  // `dlaunch check`: the container engine `auto` finds ("podman version 4.3.1");
  // with --image, that image's ID there ("absent": not there); with
  // --sync-git, the commit its checkout is at ("none": no checkout). Empty:
  // not asked.
  std::string container_engine = {};
  std::string image_id = {};
  std::string git_commit = {};
};

// dlaunch check: open a TCP connection to each target (a peer's probe port on
// the address of its chosen interface), then write for duration_ms and report.
struct PeerTarget {
  std::int32_t node = 0;
  std::string address;
  std::int32_t port = 0;
};

struct PeerTest {
  static constexpr Type kType = Type::peer_test;
  static constexpr std::string_view kName = "peer_test";
  std::int32_t round = 0;
  std::int32_t duration_ms = 1000;
  std::int32_t timeout_ms = 3000;  // for the connect
  std::vector<PeerTarget> targets;
};

struct PeerResult {
  std::int32_t node = 0;
  bool reached = false;
  std::int32_t rtt_us = 0;      // connect time
  std::uint64_t bytes = 0;      // written and acknowledged by the peer's close
  std::int64_t elapsed_us = 0;  // from connected to the peer's close
  std::string error;            // why not reached, or why the transfer stopped
};

struct PeerTestReport {
  static constexpr Type kType = Type::peer_test_report;
  static constexpr std::string_view kName = "peer_test_report";
  std::int32_t round = 0;
  std::vector<PeerResult> results;  // one per target, in order
};

// Files under a directory of rank 0's host, copied to the coordinator:
// --tensorboard-dir's event files as they grow, --checkpoint-dir's files once
// each is complete (and, for a checkpoint, back from the coordinator to a new
// node 0 before its ranks start).
enum class FileSet : std::uint8_t { tensorboard = 0, checkpoint = 1 };

// New bytes of one file. `path` is relative to the directory (no "..", no
// leading "/"). `restart`: the file was rewritten or truncated, so the copy
// starts again from offset 0. `complete`: these bytes end the file as it was
// when read; a checkpoint's copy is put in place only then.
struct FileChunk {
  static constexpr Type kType = Type::file_chunk;
  static constexpr std::string_view kName = "file_chunk";
  std::string path;
  std::uint64_t offset = 0;
  bool restart = false;
  std::string data;  // at most kMaxFileChunk bytes
  FileSet set = FileSet::tensorboard;
  bool complete = false;
};

// --sync: one entry of the synced directory. `path` is relative to it
// ('/'-separated, no "." or ".." component, no leading '/'); a directory comes
// before what it holds.
enum class SyncKind : std::uint8_t { file = 0, dir = 1, symlink = 2 };
struct SyncEntry {
  std::string path;
  SyncKind kind = SyncKind::file;
  std::uint32_t mode = 0;   // permission bits (07777); unused for symlinks
  std::uint64_t size = 0;   // files only
  std::string sha256 = {};  // files only: 32 bytes
  std::string target = {};  // symlinks only, as read (never followed)
};

// Where an offer's files go. `image_cache`: the host's cache of image files
// (--image-file), one file named by its SHA-256; a cached file whose size
// matches is taken as it is (it was checked before it got that name).
enum class SyncInto : std::uint8_t { workdir = 0, image_cache = 1 };

// A batch of the offer: entries[i] has index first + i in the whole offer.
// `delete_extra` (--sync-delete), `ignore` (the rules, see
// transfer/sync_ignore.h) and `into` are read from the first batch only. A
// node gets one offer per destination, the next once the last one's SyncDone
// is in.
struct SyncOffer {
  static constexpr Type kType = Type::sync_offer;
  static constexpr std::string_view kName = "sync_offer";
  bool delete_extra = false;
  std::vector<std::string> ignore = {};
  std::uint32_t first = 0;
  std::vector<SyncEntry> entries = {};
  bool last = false;
  SyncInto into = SyncInto::workdir;
  // The source directory as the coordinator's machine names it
  // (common/directory_overlap.h): an agent on that machine refuses a
  // destination that holds it, is it, or lies inside it. Empty machine: unknown.
  DirectoryIdentity source = {};
};

// The files the agent lacks or holds with other content, by offer index,
// increasing; `last`: nothing more is wanted.
struct SyncWant {
  static constexpr Type kType = Type::sync_want;
  static constexpr std::string_view kName = "sync_want";
  std::vector<std::uint32_t> indices = {};
  bool last = false;
};

// A piece of a wanted file; a file's pieces come in order, an empty file as
// one empty piece. The file is complete once offset + data reaches its size.
struct SyncData {
  static constexpr Type kType = Type::sync_data;
  static constexpr std::string_view kName = "sync_data";
  std::uint32_t index = 0;
  std::uint64_t offset = 0;
  std::string data = {};  // at most kMaxFileChunk bytes
};

struct SyncDone {
  static constexpr Type kType = Type::sync_done;
  static constexpr std::string_view kName = "sync_done";
  std::uint64_t files_written = 0;   // files and symlinks written
  std::uint64_t bytes_received = 0;  // file content received
  std::uint64_t deleted = 0;         // --sync-delete
  std::string error = {};            // empty: the destination matches the offer
};

// dlaunch check --nccl: an all-reduce across every GPU of the hosts. Sent
// first with no unique_id to the host of rank 0, whose agent creates one
// (and the bootstrap root behind it) and reports it; then to every host with
// GPUs, each running its GPUs as ranks first_rank..first_rank+gpus-1.
struct NcclTest {
  static constexpr Type kType = Type::nccl_test;
  static constexpr std::string_view kName = "nccl_test";
  std::string unique_id = {};            // ncclUniqueId's bytes; empty: create one
  std::int32_t nranks = 0;               // every GPU of every host
  std::int32_t first_rank = 0;           // this host's first
  std::int32_t gpus = 0;                 // this host's GPUs 0..gpus-1 take part
  std::string socket_ifname = {};        // NCCL_SOCKET_IFNAME on this host; empty: NCCL's choice
  std::vector<std::int64_t> sizes = {};  // bytes per all-reduce, one test each
  std::int32_t iterations = 20;          // timed, after `warmup` untimed ones
  std::int32_t warmup = 5;
};

struct NcclTiming {
  std::int64_t bytes = 0;
  std::int64_t time_ns = 0;  // per all-reduce, averaged over the iterations
};

struct NcclReport {
  static constexpr Type kType = Type::nccl_report;
  static constexpr std::string_view kName = "nccl_report";
  std::string unique_id = {};            // the answer to a NcclTest without one
  std::string version = {};              // NCCL's, "2.27.3"
  std::string error = {};                // empty: the test ran
  std::vector<NcclTiming> timings = {};  // one per size, in order
};

// The coordinator asks an agent for the stacks of its running ranks (all
// when `ranks` is empty); the agent answers one StacksReport per rank, then
// one with rank -1: it has no more.
struct StacksRequest {
  static constexpr Type kType = Type::stacks_request;
  static constexpr std::string_view kName = "stacks_request";
  std::int32_t id = 0;
  std::vector<std::int32_t> ranks = {};
};

inline constexpr std::size_t kMaxStackText = 256 * 1024;
// A flight recorder dump larger than this stays on its host (the report says
// where): a report must fit one frame with its text.
inline constexpr std::size_t kMaxFlightRecord = 640 * 1024;
inline constexpr std::size_t kMaxStackRanks = 4096;

struct StacksReport {
  static constexpr Type kType = Type::stacks_report;
  static constexpr std::string_view kName = "stacks_report";
  std::int32_t id = 0;
  std::int32_t rank = -1;       // -1: the agent's last report for this id
  std::string state = {};       // /proc's: R, S, D, T, t, Z; empty when gone
  std::int64_t cpu_ms = 0;      // CPU time used over the sampling interval
  std::int64_t sampled_ms = 0;  // that interval
  std::string wchan = {};       // where the kernel has it waiting
  std::int64_t silent_ms = -1;  // since its last output line; -1: none yet
  std::string tools = {};       // what took the stack: "faulthandler", "gdb", ...
  std::string text = {};        // the dump, at most kMaxStackText
  // torch's NCCL flight recorder dump of the rank (a pickle), at most
  // kMaxFlightRecord; empty: none (no NCCL process group, or too large).
  std::string flight_record = {};
};

struct Heartbeat {
  static constexpr Type kType = Type::heartbeat;
  static constexpr std::string_view kName = "heartbeat";
};

struct Reject {
  static constexpr Type kType = Type::reject;
  static constexpr std::string_view kName = "reject";
  std::string reason;
};

using Message = std::variant<Hello, Challenge, Join, Welcome, Assign, LogLine, RankExit, AgentDone,
                             Stop, Heartbeat, Reject, Probe, ProbeReport, FactsRequest, HostFacts,
                             PeerTest, PeerTestReport, FileChunk, SyncOffer, SyncWant, SyncData,
                             SyncDone, NcclTest, NcclReport, StacksRequest, StacksReport>;

// A whole frame (header included) for one message.
std::string encode(const Message& m);
// The frame encode(LogLine{rank, stream, text, end}) gives, appended to `out`:
// the agents' hot path, with no copy of the line and no buffer of its own.
void append_log_line(std::string& out, std::int32_t rank, Stream stream, std::string_view text,
                     LineEnd end);
// The bytes append_log_line adds besides the text: the frame's header (length,
// type), rank, stream, the text's length and how it ended.
inline constexpr std::size_t kLogLineOverhead = 4 + 1 + 4 + 1 + 4 + 1;
// Decodes one frame's payload; nullopt when it is malformed for its type.
std::optional<Message> decode(std::uint8_t type, std::string_view payload);
std::string_view type_name(const Message& m);

}  // namespace dlaunch::proto
