#include "protocol/messages.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include "common/utf8.h"
#include "protocol/field_codec.h"
#include "protocol/frame.h"
#include "protocol/relative_path.h"
#include "protocol/wire.h"

namespace dlaunch::proto {
namespace {

// Each message's fields, once, in wire order (protocol/field_codec.h), and
// after them the rules across fields that a decoded message must satisfy.

// Const when encoding, not when decoding.
template <class M, class T>
concept Like = std::is_same_v<std::remove_const_t<M>, T>;

template <class C>
void fields(C& c, Like<Hello> auto& m) {
  c.u32(m.magic);
  c.u16(m.version);
  c.str(m.agent_nonce, kNonceSize);
}

template <class C>
void fields(C& c, Like<Challenge> auto& m) {
  c.u32(m.magic);
  c.u16(m.version);
  c.str(m.server_nonce, kNonceSize);
}

template <class C, class I>
void interface_fields(C& c, I& i) {
  c.str(i.name, kMaxInterfaceName);
  c.enumeration(i.kind, net::InterfaceKind::physical, net::InterfaceKind::other);
  c.i32(i.mtu);
  c.flag(i.up);
  c.list(i.addresses, kMaxAddressesPerInterface, [&c](auto& a) {
    c.str(a.address, kMaxHostName);
    c.u8(a.prefix);
    c.flag(a.ipv6);
  });
}

template <class C>
void fields(C& c, Like<Join> auto& m) {
  c.str(m.proof, 64);
  c.i32(m.node_rank);
  c.i32(m.nproc);
  c.i32(m.gpus);
  c.str(m.host, kMaxHostName);
  c.i32(m.master_port);
  c.i64(m.pid);
  c.i32(m.nnodes);
  c.i32(m.probe_port);
  c.list(m.interfaces, kMaxInterfaces, [&c](auto& i) { interface_fields(c, i); });
  c.str(m.machine_id, kMaxMachineId);
}

template <class C>
void fields(C& c, Like<Welcome> auto& m) {
  c.str(m.proof, 64);
}

template <class C>
void fields(C& c, Like<Assign> auto& m) {
  c.str(m.job, 1024);
  c.i32(m.round);
  c.i32(m.max_restarts);
  c.i32(m.node_rank);
  c.i32(m.nnodes);
  c.i32(m.rank_offset);
  c.i32(m.local_world_size);
  c.i32(m.world_size);
  c.str(m.master_addr, kMaxHostName);
  c.i32(m.master_port);
  c.str(m.socket_ifname, kMaxInterfaceName);
}

// A LogLine, or the same fields with the text borrowed (append_log_line).
struct LogLineView {
  std::int32_t rank;
  Stream stream;
  std::string_view text;
  LineEnd end;
};

template <class C, class L>
void log_line_fields(C& c, L& m) {
  c.i32(m.rank);
  c.enumeration(m.stream, Stream::out, Stream::err);
  c.str(m.text, kMaxLogChunk);
  c.enumeration(m.end, LineEnd::newline, LineEnd::partial);
}

template <class C>
void fields(C& c, Like<LogLine> auto& m) {
  log_line_fields(c, m);
}

template <class C>
void fields(C& c, Like<RankExit> auto& m) {
  c.i32(m.rank);
  c.i32(m.exit_code);
  c.i32(m.signal);
  c.str(m.error, kMaxRankError);
}

template <class C>
void fields(C& c, Like<AgentDone> auto& m) {
  c.i32(m.round);
  c.i32(m.next_master_port);
}

template <class C>
void fields(C& c, Like<Stop> auto& m) {
  c.i32(m.exit_code);
  c.flag(m.restart);
  c.i32(m.grace_s);
  c.str(m.reason, kMaxStopReason);
}

template <class C>
void fields(C& c, Like<Probe> auto& m) {
  c.i32(m.port);
  c.i32(m.timeout_ms);
  c.strings(m.addresses, net::kMaxCandidates);
}

template <class C>
void fields(C& c, Like<ProbeReport> auto& m) {
  c.list(m.outcomes, net::kMaxCandidates, [&c](auto& o) {
    c.flag(o.reached);
    c.i32(o.rtt_us);
    c.str(o.interface, kMaxInterfaceName);
    c.str(o.error, kMaxProbeError);
  });
}

template <class C>
void fields(C&, Like<FactsRequest> auto&) {}

template <class C>
void fields(C&, Like<Heartbeat> auto&) {}

template <class C>
void fields(C& c, Like<HostFacts> auto& m) {
  c.str(m.agent_version, kMaxFactText);
  c.str(m.os, kMaxFactText);
  c.str(m.kernel, kMaxFactText);
  c.i32(m.cpus);
  c.list(m.gpus, kMaxGpus, [&c](auto& g) {
    c.str(g.name, kMaxFactText);
    c.u64(g.memory_bytes);
    c.u64(g.memory_used_bytes);
    c.i32(g.utilization_pct);
    c.str(g.held_by_job, kMaxFactText);
  });
  c.str(m.driver_version, kMaxFactText);
  c.str(m.cuda_version, kMaxFactText);
  c.i64(m.home_free);
  c.i64(m.tmp_free);
  c.i64(m.shm_size);
  c.i64(m.wall_clock_us);
  c.str(m.python_version, kMaxFactText);
  c.str(m.torch_version, kMaxFactText);
  c.str(m.python_path, kMaxFactText);
  c.str(m.arch, kMaxFactText);
  c.str(m.libc, kMaxFactText);
  c.str(m.agent_arch, kMaxFactText);
  c.str(m.container_engine, kMaxFactText);
  c.str(m.image_id, kMaxFactText);
  c.str(m.git_commit, kMaxFactText);
}

template <class C>
void fields(C& c, Like<FileChunk> auto& m) {
  c.str(m.path, kMaxFilePath);
  c.u64(m.offset);
  c.flag(m.restart);
  c.str(m.data, kMaxFileChunk);
  c.enumeration(m.set, FileSet::tensorboard, FileSet::checkpoint);
  c.flag(m.complete);
}

template <class C>
void fields(C& c, Like<SyncOffer> auto& m) {
  c.flag(m.delete_extra);
  c.strings(m.ignore, kMaxIgnoreLines);
  c.u32(m.first);
  c.list(m.entries, kMaxSyncEntriesPerOffer, [&c](auto& e) {
    c.str(e.path, kMaxFilePath);
    c.enumeration(e.kind, SyncKind::file, SyncKind::symlink);
    c.u32(e.mode);
    c.u64(e.size);
    c.str(e.sha256, 32);
    c.str(e.target, kMaxLinkTarget);
  });
  c.flag(m.last);
  c.enumeration(m.into, SyncInto::workdir, SyncInto::image_cache);
  c.str(m.source.machine, kMaxMachineId);
  c.str(m.source.path, kMaxFilePath);
  c.u64(m.source.device);
  c.u64(m.source.inode);
}

template <class C>
void fields(C& c, Like<SyncWant> auto& m) {
  c.list(m.indices, kMaxSyncWant, [&c](auto& i) { c.u32(i); });
  c.flag(m.last);
}

template <class C>
void fields(C& c, Like<SyncData> auto& m) {
  c.u32(m.index);
  c.u64(m.offset);
  c.str(m.data, kMaxFileChunk);
}

template <class C>
void fields(C& c, Like<SyncDone> auto& m) {
  c.u64(m.files_written);
  c.u64(m.bytes_received);
  c.u64(m.deleted);
  c.str(m.error, kMaxStopReason);
}

template <class C>
void fields(C& c, Like<PeerTest> auto& m) {
  c.i32(m.round);
  c.i32(m.duration_ms);
  c.i32(m.timeout_ms);
  c.list(m.targets, kMaxPeerTargets, [&c](auto& t) {
    c.i32(t.node);
    c.str(t.address, kMaxHostName);
    c.i32(t.port);
  });
}

template <class C>
void fields(C& c, Like<PeerTestReport> auto& m) {
  c.i32(m.round);
  c.list(m.results, kMaxPeerTargets, [&c](auto& p) {
    c.i32(p.node);
    c.flag(p.reached);
    c.i32(p.rtt_us);
    c.u64(p.bytes);
    c.i64(p.elapsed_us);
    c.str(p.error, kMaxProbeError);
  });
}

template <class C>
void fields(C& c, Like<NcclTest> auto& m) {
  c.str(m.unique_id, kNcclUniqueIdBytes);
  c.i32(m.nranks);
  c.i32(m.first_rank);
  c.i32(m.gpus);
  c.str(m.socket_ifname, kMaxHostName);
  c.list(m.sizes, kMaxNcclSizes, [&c](auto& size) { c.i64(size); });
  c.i32(m.iterations);
  c.i32(m.warmup);
}

template <class C>
void fields(C& c, Like<NcclReport> auto& m) {
  c.str(m.unique_id, kNcclUniqueIdBytes);
  c.str(m.version, kMaxFactText);
  c.str(m.error, kMaxStopReason);
  c.list(m.timings, kMaxNcclSizes, [&c](auto& t) {
    c.i64(t.bytes);
    c.i64(t.time_ns);
  });
}

template <class C>
void fields(C& c, Like<StacksRequest> auto& m) {
  c.i32(m.id);
  c.list(m.ranks, kMaxStackRanks, [&c](auto& r) { c.i32(r); });
}

template <class C>
void fields(C& c, Like<StacksReport> auto& m) {
  c.i32(m.id);
  c.i32(m.rank);
  c.str(m.state, 4);
  c.i64(m.cpu_ms);
  c.i64(m.sampled_ms);
  c.str(m.wchan, kMaxFactText);
  c.i64(m.silent_ms);
  c.str(m.tools, kMaxFactText);
  c.str(m.text, kMaxStackText);
  c.str(m.flight_record, kMaxFlightRecord);
}

template <class C>
void fields(C& c, Like<Reject> auto& m) {
  c.str(m.reason, kMaxStopReason);
}

bool valid_port(std::int32_t p) {
  return p >= 0 && p <= 65535;
}

// A path relative to the synced directory (see relative_path.h), within the
// length limit. The agent checks again before it writes.
bool valid_sync_path(std::string_view p) {
  return p.size() <= kMaxFilePath && safe_relative_path(p);
}

bool valid_sync_entry(const SyncEntry& e) {
  if (!valid_sync_path(e.path) || e.mode > 07777) return false;
  switch (e.kind) {
    case SyncKind::file:
      return e.sha256.size() == 32 && e.target.empty();
    case SyncKind::dir:
      return e.size == 0 && e.sha256.empty() && e.target.empty();
    case SyncKind::symlink:
      return e.size == 0 && e.sha256.empty() && !e.target.empty() &&
             e.target.find('\0') == std::string::npos;
  }
  return false;
}

// Messages without rules beyond their fields' bounds.
template <class M>
bool valid(const M&) {
  return true;
}

// The host name and nproc are checked by the rendezvous, which says why in
// its Reject; what only a broken agent sends is refused here. Names reach
// node 0's terminal and the job record: printable text only.
bool valid(const Join& m) {
  if (m.nproc < 1 || m.gpus < 0 || m.gpus > static_cast<std::int32_t>(kMaxGpus) ||
      m.node_rank < -1 || !valid_port(m.master_port) || m.nnodes < 0 || !valid_port(m.probe_port) ||
      !printable_utf8(m.machine_id))
    return false;
  for (const auto& i : m.interfaces) {
    if (!printable_utf8(i.name)) return false;
    for (const auto& a : i.addresses)
      if (a.prefix > (a.ipv6 ? 128 : 32) || !printable_utf8(a.address)) return false;
  }
  return true;
}

bool valid(const Assign& m) {
  return m.nnodes >= 1 && m.node_rank >= 0 && m.node_rank < m.nnodes && m.rank_offset >= 0 &&
         m.local_world_size >= 1 && m.world_size >= 1 &&
         std::int64_t{m.rank_offset} + m.local_world_size <= m.world_size &&
         valid_port(m.master_port);
}

bool valid(const AgentDone& m) {
  return valid_port(m.next_master_port);
}

bool valid(const Probe& m) {
  if (!valid_port(m.port) || m.port == 0 || m.timeout_ms < 1 || m.timeout_ms > 60'000) return false;
  return std::ranges::all_of(m.addresses,
                             [](const auto& a) { return !a.empty() && a.size() <= kMaxHostName; });
}

bool valid(const ProbeReport& m) {
  return std::ranges::all_of(m.outcomes, [](const auto& o) { return o.rtt_us >= 0; });
}

bool valid(const HostFacts& m) {
  return m.cpus >= 0 && m.home_free >= -1 && m.tmp_free >= -1 && m.shm_size >= -1 &&
         std::ranges::all_of(m.gpus, [](const auto& g) {
           return g.utilization_pct >= -1 && g.utilization_pct <= 100;
         });
}

bool valid(const FileChunk& m) {
  return !m.path.empty();
}

bool valid(const SyncOffer& m) {
  return std::uint64_t{m.first} + m.entries.size() <= kMaxSyncEntries &&
         std::ranges::all_of(
             m.ignore, [](const auto& l) { return !l.empty() && l.size() <= kMaxFilePath; }) &&
         std::ranges::all_of(m.entries, valid_sync_entry);
}

// Indices in the whole offer, strictly increasing.
bool valid(const SyncWant& m) {
  for (std::size_t i = 0; i < m.indices.size(); ++i) {
    if (m.indices[i] >= kMaxSyncEntries || (i > 0 && m.indices[i] <= m.indices[i - 1]))
      return false;
  }
  return true;
}

bool valid(const SyncData& m) {
  return m.index < kMaxSyncEntries;
}

bool valid(const PeerTest& m) {
  return m.round >= 0 && m.duration_ms >= 0 && m.duration_ms <= kMaxPeerTestMs &&
         m.timeout_ms >= 1 && m.timeout_ms <= kMaxPeerTestMs &&
         std::ranges::all_of(m.targets, [](const auto& t) {
           return t.node >= 0 && !t.address.empty() && valid_port(t.port) && t.port != 0;
         });
}

bool valid(const PeerTestReport& m) {
  return m.round >= 0 && std::ranges::all_of(m.results, [](const auto& p) {
           return p.node >= 0 && p.rtt_us >= 0 && p.elapsed_us >= 0;
         });
}

bool valid(const NcclTest& m) {
  const bool sized = m.unique_id.empty() || m.unique_id.size() == kNcclUniqueIdBytes;
  return sized && m.nranks >= 0 && m.first_rank >= 0 && m.gpus >= 0 &&
         m.gpus <= static_cast<std::int32_t>(kMaxGpus) &&
         std::int64_t{m.first_rank} + m.gpus <= m.nranks && m.iterations >= 1 &&
         m.iterations <= 10'000 && m.warmup >= 0 && m.warmup <= 10'000 &&
         std::ranges::all_of(m.sizes, [](auto size) { return size >= 0 && size <= kMaxNcclBytes; });
}

bool valid(const StacksReport& m) {
  return m.rank >= -1 && m.cpu_ms >= 0 && m.sampled_ms >= 0 && m.silent_ms >= -1 &&
         printable_utf8(m.state) && printable_utf8(m.wchan) && printable_utf8(m.tools);
}

bool valid(const NcclReport& m) {
  return std::ranges::all_of(m.timings,
                             [](const auto& t) { return t.bytes >= 0 && t.time_ns >= 0; });
}

template <class M>
std::optional<Message> decode_as(wire::Reader& r) {
  M m;
  wire::Decoder d(r);
  fields(d, m);
  if (d.failed() || !valid(m)) return std::nullopt;
  return m;
}

// The message whose wire type is `type`, from the variant's alternatives.
template <std::size_t... I>
std::optional<Message> decode_by_type(Type type, wire::Reader& r, std::index_sequence<I...>) {
  std::optional<Message> out;
  (void)((std::variant_alternative_t<I, Message>::kType == type
              ? (out = decode_as<std::variant_alternative_t<I, Message>>(r), true)
              : false) ||
         ...);
  return out;
}

// Every wire type from 1 up is one alternative's, once.
template <std::size_t... I>
constexpr bool types_are_dense(std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  std::array<int, n + 1> seen{};
  for (auto t : {static_cast<std::size_t>(std::variant_alternative_t<I, Message>::kType)...}) {
    if (t < 1 || t > n || seen[t]++) return false;
  }
  return true;
}
constexpr auto kAlternatives = std::make_index_sequence<std::variant_size_v<Message>>{};
static_assert(types_are_dense(kAlternatives));
static_assert(std::variant_size_v<Message> == static_cast<std::size_t>(kLastType));

Type type_of(const Message& m) {
  return std::visit([](const auto& msg) { return std::remove_cvref_t<decltype(msg)>::kType; }, m);
}

}  // namespace

std::string encode(const Message& m) {
  wire::Writer w;
  wire::Encoder e(w);
  std::visit([&e](const auto& msg) { fields(e, msg); }, m);
  return encode_frame(static_cast<std::uint8_t>(type_of(m)), w.bytes());
}

void append_log_line(std::string& out, std::int32_t rank, Stream stream, std::string_view text,
                     LineEnd end) {
  // encode_frame's header (the length counts the type byte), with the length
  // filled in once the payload is written.
  const std::size_t start = out.size();
  wire::Writer w(std::move(out));
  w.u32(0);
  w.u8(static_cast<std::uint8_t>(Type::log_line));
  wire::Encoder e(w);
  const LogLineView line{rank, stream, text, end};
  log_line_fields(e, line);
  out = w.take();
  wire::Writer length;
  length.u32(static_cast<std::uint32_t>(out.size() - start - 4));
  out.replace(start, 4, length.bytes());
}

std::optional<Message> decode(std::uint8_t type, std::string_view payload) {
  if (type < static_cast<std::uint8_t>(Type::hello) ||
      type > static_cast<std::uint8_t>(kLastType)) {
    return std::nullopt;
  }
  wire::Reader r(payload);
  auto m = decode_by_type(static_cast<Type>(type), r, kAlternatives);
  if (!m || !r.done()) return std::nullopt;
  return m;
}

std::string_view type_name(const Message& m) {
  return std::visit([](const auto& msg) { return std::remove_cvref_t<decltype(msg)>::kName; }, m);
}

}  // namespace dlaunch::proto
