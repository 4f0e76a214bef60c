#include "protocol/messages.h"

#include "common/overloaded.h"
#include "protocol/frame.h"
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
}
void put(wire::Writer& w, const LogLine& m) {
  w.i32(m.rank);
  w.u8(static_cast<std::uint8_t>(m.stream));
  w.str(m.text);
  w.u8(static_cast<std::uint8_t>(m.end));
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
                    },
                    m);
}

bool valid_port(std::int32_t p) {
  return p >= 0 && p <= 65535;
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
      if (m.nproc < 1 || m.gpus < 0 || m.node_rank < -1 || !valid_port(m.master_port) ||
          m.nnodes < 0) {
        return std::nullopt;
      }
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

std::string encode(const Message& m) {
  wire::Writer w;
  std::visit([&w](const auto& msg) { put(w, msg); }, m);
  return encode_frame(static_cast<std::uint8_t>(type_of(m)), w.bytes());
}

std::optional<Message> decode(std::uint8_t type, std::string_view payload) {
  if (type < static_cast<std::uint8_t>(Type::hello) ||
      type > static_cast<std::uint8_t>(Type::reject)) {
    return std::nullopt;
  }
  wire::Reader r(payload);
  auto m = get(static_cast<Type>(type), r);
  if (!m || !r.done()) return std::nullopt;
  return m;
}

std::string_view type_name(const Message& m) {
  static constexpr std::string_view names[] = {"hello",  "challenge", "join",      "welcome",
                                               "assign", "log_line",  "rank_exit", "agent_done",
                                               "stop",   "heartbeat", "reject"};
  return names[m.index()];
}

}  // namespace dlaunch::proto
