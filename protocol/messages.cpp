#include "protocol/messages.h"

#include "common/overloaded.h"
#include "protocol/frame.h"
#include "protocol/relative_path.h"
#include "protocol/wire.h"

namespace dlaunch::proto {
namespace {

void put(wire::Writer& w, const Hello& m) {
  w.u32(m.magic);
  w.u16(m.version);
  w.str(m.agent_nonce);
}
void put(wire::Writer& w, const Challenge& m) {
  w.u32(m.magic);
  w.u16(m.version);
  w.str(m.server_nonce);
}
void put(wire::Writer& w, const Join& m) {
  w.str(m.proof);
  w.i32(m.node_rank);
  w.i32(m.nproc);
  w.i32(m.gpus);
  w.str(m.host);
  w.i32(m.master_port);
  w.i64(m.pid);
  w.i32(m.nnodes);
  w.i32(m.probe_port);
  w.u32(static_cast<std::uint32_t>(m.interfaces.size()));
  for (const auto& i : m.interfaces) {
    w.str(i.name);
    w.u8(static_cast<std::uint8_t>(i.kind));
    w.i32(i.mtu);
    w.u8(i.up ? 1 : 0);
    w.u32(static_cast<std::uint32_t>(i.addresses.size()));
    for (const auto& a : i.addresses) {
      w.str(a.address);
      w.u8(a.prefix);
      w.u8(a.ipv6 ? 1 : 0);
    }
  }
  w.str(m.machine_id);
}
void put(wire::Writer& w, const Welcome& m) {
  w.str(m.proof);
}
void put(wire::Writer& w, const Assign& m) {
  w.str(m.job);
  w.i32(m.round);
  w.i32(m.max_restarts);
  w.i32(m.node_rank);
  w.i32(m.nnodes);
  w.i32(m.rank_offset);
  w.i32(m.local_world_size);
  w.i32(m.world_size);
  w.str(m.master_addr);
  w.i32(m.master_port);
  w.str(m.socket_ifname);
}
void put_log_line(wire::Writer& w, std::int32_t rank, Stream stream, std::string_view text,
                  LineEnd end) {
  w.i32(rank);
  w.u8(static_cast<std::uint8_t>(stream));
  w.str(text);
  w.u8(static_cast<std::uint8_t>(end));
}
void put(wire::Writer& w, const LogLine& m) {
  put_log_line(w, m.rank, m.stream, m.text, m.end);
}
void put(wire::Writer& w, const RankExit& m) {
  w.i32(m.rank);
  w.i32(m.exit_code);
  w.i32(m.signal);
}
void put(wire::Writer& w, const AgentDone& m) {
  w.i32(m.round);
  w.i32(m.next_master_port);
}
void put(wire::Writer& w, const Stop& m) {
  w.i32(m.exit_code);
  w.u8(m.restart ? 1 : 0);
  w.i32(m.grace_s);
  w.str(m.reason);
}
void put(wire::Writer& w, const Probe& m) {
  w.i32(m.port);
  w.i32(m.timeout_ms);
  w.strings(m.addresses);
}
void put(wire::Writer& w, const ProbeReport& m) {
  w.u32(static_cast<std::uint32_t>(m.outcomes.size()));
  for (const auto& o : m.outcomes) {
    w.u8(o.reached ? 1 : 0);
    w.i32(o.rtt_us);
    w.str(o.interface);
    w.str(o.error);
  }
}
void put(wire::Writer&, const FactsRequest&) {}
void put(wire::Writer& w, const HostFacts& m) {
  w.str(m.agent_version);
  w.str(m.os);
  w.str(m.kernel);
  w.i32(m.cpus);
  w.u32(static_cast<std::uint32_t>(m.gpus.size()));
  for (const auto& g : m.gpus) {
    w.str(g.name);
    w.u64(g.memory_bytes);
    w.u64(g.memory_used_bytes);
    w.i32(g.utilization_pct);
    w.str(g.held_by_job);
  }
  w.str(m.driver_version);
  w.str(m.cuda_version);
  w.i64(m.home_free);
  w.i64(m.tmp_free);
  w.i64(m.shm_size);
  w.i64(m.wall_clock_us);
  w.str(m.python_version);
  w.str(m.torch_version);
  w.str(m.python_path);
  w.str(m.arch);
  w.str(m.libc);
  w.str(m.agent_arch);
  w.str(m.container_engine);
  w.str(m.image_id);
  w.str(m.git_commit);
}
void put(wire::Writer& w, const FileChunk& m) {
  w.str(m.path);
  w.u64(m.offset);
  w.u8(m.restart ? 1 : 0);
  w.str(m.data);
  w.u8(static_cast<std::uint8_t>(m.set));
  w.u8(m.complete ? 1 : 0);
}
void put(wire::Writer& w, const SyncOffer& m) {
  w.u8(m.delete_extra ? 1 : 0);
  w.strings(m.ignore);
  w.u32(m.first);
  w.u32(static_cast<std::uint32_t>(m.entries.size()));
  for (const auto& e : m.entries) {
    w.str(e.path);
    w.u8(static_cast<std::uint8_t>(e.kind));
    w.u32(e.mode);
    w.u64(e.size);
    w.str(e.sha256);
    w.str(e.target);
  }
  w.u8(m.last ? 1 : 0);
  w.u8(static_cast<std::uint8_t>(m.into));
}
void put(wire::Writer& w, const SyncWant& m) {
  w.u32(static_cast<std::uint32_t>(m.indices.size()));
  for (const auto i : m.indices) w.u32(i);
  w.u8(m.last ? 1 : 0);
}
void put(wire::Writer& w, const SyncData& m) {
  w.u32(m.index);
  w.u64(m.offset);
  w.str(m.data);
}
void put(wire::Writer& w, const SyncDone& m) {
  w.u64(m.files_written);
  w.u64(m.bytes_received);
  w.u64(m.deleted);
  w.str(m.error);
}
void put(wire::Writer& w, const PeerTest& m) {
  w.i32(m.round);
  w.i32(m.duration_ms);
  w.i32(m.timeout_ms);
  w.u32(static_cast<std::uint32_t>(m.targets.size()));
  for (const auto& t : m.targets) {
    w.i32(t.node);
    w.str(t.address);
    w.i32(t.port);
  }
}
void put(wire::Writer& w, const PeerTestReport& m) {
  w.i32(m.round);
  w.u32(static_cast<std::uint32_t>(m.results.size()));
  for (const auto& r : m.results) {
    w.i32(r.node);
    w.u8(r.reached ? 1 : 0);
    w.i32(r.rtt_us);
    w.u64(r.bytes);
    w.i64(r.elapsed_us);
    w.str(r.error);
  }
}
void put(wire::Writer& w, const NcclTest& m) {
  w.str(m.unique_id);
  w.i32(m.nranks);
  w.i32(m.first_rank);
  w.i32(m.gpus);
  w.str(m.socket_ifname);
  w.u32(static_cast<std::uint32_t>(m.sizes.size()));
  for (auto size : m.sizes) w.i64(size);
  w.i32(m.iterations);
  w.i32(m.warmup);
}
void put(wire::Writer& w, const NcclReport& m) {
  w.str(m.unique_id);
  w.str(m.version);
  w.str(m.error);
  w.u32(static_cast<std::uint32_t>(m.timings.size()));
  for (const auto& t : m.timings) {
    w.i64(t.bytes);
    w.i64(t.time_ns);
  }
}
void put(wire::Writer&, const Heartbeat&) {}
void put(wire::Writer& w, const Reject& m) {
  w.str(m.reason);
}

Type type_of(const Message& m) {
  return std::visit(Overloaded{
                        [](const Hello&) { return Type::hello; },
                        [](const Challenge&) { return Type::challenge; },
                        [](const Join&) { return Type::join; },
                        [](const Welcome&) { return Type::welcome; },
                        [](const Assign&) { return Type::assign; },
                        [](const LogLine&) { return Type::log_line; },
                        [](const RankExit&) { return Type::rank_exit; },
                        [](const AgentDone&) { return Type::agent_done; },
                        [](const Stop&) { return Type::stop; },
                        [](const Heartbeat&) { return Type::heartbeat; },
                        [](const Reject&) { return Type::reject; },
                        [](const Probe&) { return Type::probe; },
                        [](const ProbeReport&) { return Type::probe_report; },
                        [](const FactsRequest&) { return Type::facts_request; },
                        [](const HostFacts&) { return Type::host_facts; },
                        [](const PeerTest&) { return Type::peer_test; },
                        [](const PeerTestReport&) { return Type::peer_test_report; },
                        [](const FileChunk&) { return Type::file_chunk; },
                        [](const SyncOffer&) { return Type::sync_offer; },
                        [](const SyncWant&) { return Type::sync_want; },
                        [](const SyncData&) { return Type::sync_data; },
                        [](const SyncDone&) { return Type::sync_done; },
                        [](const NcclTest&) { return Type::nccl_test; },
                        [](const NcclReport&) { return Type::nccl_report; },
                    },
                    m);
}

bool valid_port(std::int32_t p) {
  return p >= 0 && p <= 65535;
}

// 0 or 1 only: one encoding per value.
std::optional<bool> flag(wire::Reader& r) {
  const auto v = r.u8();
  if (v > 1) return std::nullopt;
  return v == 1;
}

bool get_interfaces(wire::Reader& r, net::Interfaces& out) {
  const auto count = r.u32();
  if (!r.ok() || count > kMaxInterfaces) return false;
  out.resize(count);
  for (auto& i : out) {
    i.name = r.str(kMaxInterfaceName);
    const auto kind = r.u8();
    if (kind > net::kLastInterfaceKind) return false;
    i.kind = static_cast<net::InterfaceKind>(kind);
    i.mtu = r.i32();
    const auto up = flag(r);
    const auto addresses = r.u32();
    if (!up || !r.ok() || addresses > kMaxAddressesPerInterface) return false;
    i.up = *up;
    i.addresses.resize(addresses);
    for (auto& a : i.addresses) {
      a.address = r.str(kMaxHostName);
      a.prefix = r.u8();
      const auto v6 = flag(r);
      if (!v6 || a.prefix > (*v6 ? 128 : 32)) return false;
      a.ipv6 = *v6;
    }
  }
  return r.ok();
}

// A path relative to the synced directory (see relative_path.h), within the
// length limit. The agent checks again before it writes.
bool valid_sync_path(std::string_view p) {
  return p.size() <= kMaxFilePath && safe_relative_path(p);
}

bool get_sync_entry(wire::Reader& r, SyncEntry& e) {
  e.path = r.str(kMaxFilePath);
  const auto kind = r.u8();
  e.mode = r.u32();
  e.size = r.u64();
  e.sha256 = r.str(32);
  e.target = r.str(kMaxLinkTarget);
  if (!r.ok() || kind > static_cast<std::uint8_t>(SyncKind::symlink) || !valid_sync_path(e.path) ||
      e.mode > 07777)
    return false;
  e.kind = static_cast<SyncKind>(kind);
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

std::optional<Message> get(Type type, wire::Reader& r) {
  switch (type) {
    case Type::hello: {
      Hello m;
      m.magic = r.u32();
      m.version = r.u16();
      m.agent_nonce = r.str(kNonceSize);
      return m;
    }
    case Type::challenge: {
      Challenge m;
      m.magic = r.u32();
      m.version = r.u16();
      m.server_nonce = r.str(kNonceSize);
      return m;
    }
    case Type::join: {
      Join m;
      m.proof = r.str(64);
      m.node_rank = r.i32();
      m.nproc = r.i32();
      m.gpus = r.i32();
      m.host = r.str(kMaxHostName);
      m.master_port = r.i32();
      m.pid = r.i64();
      m.nnodes = r.i32();
      m.probe_port = r.i32();
      if (m.nproc < 1 || m.gpus < 0 || m.node_rank < -1 || !valid_port(m.master_port) ||
          m.nnodes < 0 || !valid_port(m.probe_port) || !get_interfaces(r, m.interfaces)) {
        return std::nullopt;
      }
      m.machine_id = r.str(kMaxMachineId);
      return m;
    }
    case Type::welcome: {
      Welcome m;
      m.proof = r.str(64);
      return m;
    }
    case Type::assign: {
      Assign m;
      m.job = r.str(1024);
      m.round = r.i32();
      m.max_restarts = r.i32();
      m.node_rank = r.i32();
      m.nnodes = r.i32();
      m.rank_offset = r.i32();
      m.local_world_size = r.i32();
      m.world_size = r.i32();
      m.master_addr = r.str(kMaxHostName);
      m.master_port = r.i32();
      m.socket_ifname = r.str(kMaxInterfaceName);
      if (m.nnodes < 1 || m.node_rank < 0 || m.node_rank >= m.nnodes || m.rank_offset < 0 ||
          m.local_world_size < 1 || m.world_size < 1 ||
          std::int64_t{m.rank_offset} + m.local_world_size > m.world_size ||
          !valid_port(m.master_port)) {
        return std::nullopt;
      }
      return m;
    }
    case Type::log_line: {
      LogLine m;
      m.rank = r.i32();
      const auto stream = r.u8();
      if (stream != 1 && stream != 2) return std::nullopt;
      m.stream = static_cast<Stream>(stream);
      m.text = r.str(kMaxLogChunk);
      const auto end = r.u8();
      if (end > static_cast<std::uint8_t>(LineEnd::partial)) return std::nullopt;
      m.end = static_cast<LineEnd>(end);
      return m;
    }
    case Type::rank_exit: {
      RankExit m;
      m.rank = r.i32();
      m.exit_code = r.i32();
      m.signal = r.i32();
      return m;
    }
    case Type::agent_done: {
      AgentDone m;
      m.round = r.i32();
      m.next_master_port = r.i32();
      if (!valid_port(m.next_master_port)) return std::nullopt;
      return m;
    }
    case Type::stop: {
      Stop m;
      m.exit_code = r.i32();
      const auto restart = r.u8();
      if (restart > 1) return std::nullopt;  // one encoding per value
      m.restart = restart == 1;
      m.grace_s = r.i32();
      m.reason = r.str(kMaxStopReason);
      return m;
    }
    case Type::probe: {
      Probe m;
      m.port = r.i32();
      m.timeout_ms = r.i32();
      m.addresses = r.strings(net::kMaxCandidates);
      if (!valid_port(m.port) || m.port == 0 || m.timeout_ms < 1 || m.timeout_ms > 60'000)
        return std::nullopt;
      for (const auto& a : m.addresses) {
        if (a.empty() || a.size() > kMaxHostName) return std::nullopt;
      }
      return m;
    }
    case Type::probe_report: {
      ProbeReport m;
      const auto count = r.u32();
      if (!r.ok() || count > net::kMaxCandidates) return std::nullopt;
      m.outcomes.resize(count);
      for (auto& o : m.outcomes) {
        const auto reached = flag(r);
        if (!reached) return std::nullopt;
        o.reached = *reached;
        o.rtt_us = r.i32();
        o.interface = r.str(kMaxInterfaceName);
        o.error = r.str(kMaxProbeError);
        if (o.rtt_us < 0) return std::nullopt;
      }
      return m;
    }
    case Type::facts_request:
      return FactsRequest{};
    case Type::host_facts: {
      HostFacts m;
      m.agent_version = r.str(kMaxFactText);
      m.os = r.str(kMaxFactText);
      m.kernel = r.str(kMaxFactText);
      m.cpus = r.i32();
      const auto gpus = r.u32();
      if (!r.ok() || gpus > kMaxGpus || m.cpus < 0) return std::nullopt;
      m.gpus.resize(gpus);
      for (auto& g : m.gpus) {
        g.name = r.str(kMaxFactText);
        g.memory_bytes = r.u64();
        g.memory_used_bytes = r.u64();
        g.utilization_pct = r.i32();
        g.held_by_job = r.str(kMaxFactText);
        if (g.utilization_pct < -1 || g.utilization_pct > 100) return std::nullopt;
      }
      m.driver_version = r.str(kMaxFactText);
      m.cuda_version = r.str(kMaxFactText);
      m.home_free = r.i64();
      m.tmp_free = r.i64();
      m.shm_size = r.i64();
      m.wall_clock_us = r.i64();
      m.python_version = r.str(kMaxFactText);
      m.torch_version = r.str(kMaxFactText);
      m.python_path = r.str(kMaxFactText);
      m.arch = r.str(kMaxFactText);
      m.libc = r.str(kMaxFactText);
      m.agent_arch = r.str(kMaxFactText);
      m.container_engine = r.str(kMaxFactText);
      m.image_id = r.str(kMaxFactText);
      m.git_commit = r.str(kMaxFactText);
      if (m.home_free < -1 || m.tmp_free < -1 || m.shm_size < -1) return std::nullopt;
      return m;
    }
    case Type::file_chunk: {
      FileChunk m;
      m.path = r.str(kMaxFilePath);
      m.offset = r.u64();
      const auto restart = flag(r);
      m.data = r.str(kMaxFileChunk);
      const auto set = r.u8();
      const auto complete = flag(r);
      if (!r.ok() || !restart || !complete || m.path.empty() ||
          set > static_cast<std::uint8_t>(FileSet::checkpoint))
        return std::nullopt;
      m.restart = *restart;
      m.set = static_cast<FileSet>(set);
      m.complete = *complete;
      return m;
    }
    case Type::sync_offer: {
      SyncOffer m;
      const auto delete_extra = flag(r);
      m.ignore = r.strings(kMaxIgnoreLines);
      m.first = r.u32();
      const auto count = r.u32();
      if (!r.ok() || !delete_extra || count > kMaxSyncEntriesPerOffer ||
          std::uint64_t{m.first} + count > kMaxSyncEntries)
        return std::nullopt;
      m.delete_extra = *delete_extra;
      for (const auto& l : m.ignore)
        if (l.empty() || l.size() > kMaxFilePath) return std::nullopt;
      m.entries.resize(count);
      for (auto& e : m.entries)
        if (!get_sync_entry(r, e)) return std::nullopt;
      const auto last = flag(r);
      const auto into = r.u8();
      if (!last || !r.ok() || into > static_cast<std::uint8_t>(SyncInto::image_cache))
        return std::nullopt;
      m.last = *last;
      m.into = static_cast<SyncInto>(into);
      return m;
    }
    case Type::sync_want: {
      SyncWant m;
      const auto count = r.u32();
      if (!r.ok() || count > kMaxSyncWant) return std::nullopt;
      m.indices.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        m.indices[i] = r.u32();
        if (!r.ok() || m.indices[i] >= kMaxSyncEntries ||
            (i > 0 && m.indices[i] <= m.indices[i - 1]))
          return std::nullopt;
      }
      const auto last = flag(r);
      if (!last) return std::nullopt;
      m.last = *last;
      return m;
    }
    case Type::sync_data: {
      SyncData m;
      m.index = r.u32();
      m.offset = r.u64();
      m.data = r.str(kMaxFileChunk);
      if (!r.ok() || m.index >= kMaxSyncEntries) return std::nullopt;
      return m;
    }
    case Type::sync_done: {
      SyncDone m;
      m.files_written = r.u64();
      m.bytes_received = r.u64();
      m.deleted = r.u64();
      m.error = r.str(kMaxStopReason);
      return m;
    }
    case Type::peer_test: {
      PeerTest m;
      m.round = r.i32();
      m.duration_ms = r.i32();
      m.timeout_ms = r.i32();
      const auto count = r.u32();
      if (!r.ok() || count > kMaxPeerTargets || m.round < 0 || m.duration_ms < 0 ||
          m.duration_ms > kMaxPeerTestMs || m.timeout_ms < 1 || m.timeout_ms > kMaxPeerTestMs)
        return std::nullopt;
      m.targets.resize(count);
      for (auto& t : m.targets) {
        t.node = r.i32();
        t.address = r.str(kMaxHostName);
        t.port = r.i32();
        if (!r.ok() || t.node < 0 || t.address.empty() || !valid_port(t.port) || t.port == 0)
          return std::nullopt;
      }
      return m;
    }
    case Type::peer_test_report: {
      PeerTestReport m;
      m.round = r.i32();
      const auto count = r.u32();
      if (!r.ok() || count > kMaxPeerTargets || m.round < 0) return std::nullopt;
      m.results.resize(count);
      for (auto& p : m.results) {
        p.node = r.i32();
        const auto reached = flag(r);
        if (!reached) return std::nullopt;
        p.reached = *reached;
        p.rtt_us = r.i32();
        p.bytes = r.u64();
        p.elapsed_us = r.i64();
        p.error = r.str(kMaxProbeError);
        if (p.node < 0 || p.rtt_us < 0 || p.elapsed_us < 0) return std::nullopt;
      }
      return m;
    }
    case Type::nccl_test: {
      NcclTest m;
      m.unique_id = r.str(kNcclUniqueIdBytes);
      m.nranks = r.i32();
      m.first_rank = r.i32();
      m.gpus = r.i32();
      m.socket_ifname = r.str(kMaxHostName);
      const auto count = r.u32();
      if (!r.ok() || count > kMaxNcclSizes) return std::nullopt;
      m.sizes.resize(count);
      for (auto& size : m.sizes) {
        size = r.i64();
        if (size < 0 || size > kMaxNcclBytes) return std::nullopt;
      }
      m.iterations = r.i32();
      m.warmup = r.i32();
      const bool sized = m.unique_id.empty() || m.unique_id.size() == kNcclUniqueIdBytes;
      if (!r.ok() || !sized || m.nranks < 0 || m.first_rank < 0 || m.gpus < 0 ||
          m.gpus > static_cast<std::int32_t>(kMaxGpus) || m.first_rank + m.gpus > m.nranks ||
          m.iterations < 1 || m.iterations > 10'000 || m.warmup < 0 || m.warmup > 10'000)
        return std::nullopt;
      return m;
    }
    case Type::nccl_report: {
      NcclReport m;
      m.unique_id = r.str(kNcclUniqueIdBytes);
      m.version = r.str(kMaxFactText);
      m.error = r.str(kMaxStopReason);
      const auto count = r.u32();
      if (!r.ok() || count > kMaxNcclSizes) return std::nullopt;
      m.timings.resize(count);
      for (auto& t : m.timings) {
        t.bytes = r.i64();
        t.time_ns = r.i64();
        if (t.bytes < 0 || t.time_ns < 0) return std::nullopt;
      }
      return m;
    }
    case Type::heartbeat:
      return Heartbeat{};
    case Type::reject: {
      Reject m;
      m.reason = r.str(kMaxStopReason);
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace

Probe make_probe(const std::vector<net::Candidate>& candidates, std::int32_t port,
                 std::int32_t timeout_ms) {
  Probe probe;
  probe.port = port;
  probe.timeout_ms = timeout_ms;
  for (const auto& c : candidates) probe.addresses.push_back(c.address);
  return probe;
}

std::string encode(const Message& m) {
  wire::Writer w;
  std::visit([&w](const auto& msg) { put(w, msg); }, m);
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
  put_log_line(w, rank, stream, text, end);
  out = w.take();
  wire::Writer length;
  length.u32(static_cast<std::uint32_t>(out.size() - start - 4));
  out.replace(start, 4, length.bytes());
}

std::optional<Message> decode(std::uint8_t type, std::string_view payload) {
  if (type < static_cast<std::uint8_t>(Type::hello) ||
      type > static_cast<std::uint8_t>(Type::nccl_report)) {
    return std::nullopt;
  }
  wire::Reader r(payload);
  auto m = get(static_cast<Type>(type), r);
  if (!m || !r.done()) return std::nullopt;
  return m;
}

std::string_view type_name(const Message& m) {
  // Indexed by wire type less one, as type_of gives it (not by the variant's
  // order), and as many as the protocol has types.
  static constexpr std::string_view names[] = {"hello",        "challenge",        "join",
                                               "welcome",      "assign",           "log_line",
                                               "rank_exit",    "agent_done",       "stop",
                                               "heartbeat",    "reject",           "probe",
                                               "probe_report", "facts_request",    "host_facts",
                                               "peer_test",    "peer_test_report", "file_chunk",
                                               "sync_offer",   "sync_want",        "sync_data",
                                               "sync_done",    "nccl_test",        "nccl_report"};
  static_assert(std::size(names) == static_cast<std::size_t>(Type::nccl_report));
  static_assert(std::size(names) == std::variant_size_v<Message>);
  return names[static_cast<std::size_t>(type_of(m)) - 1];
}

}  // namespace dlaunch::proto
