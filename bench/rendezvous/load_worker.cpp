#include "bench/rendezvous/load_worker.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <variant>

#include "bench/rendezvous/source_address.h"
#include "net/probe_scouts.h"
#include "protocol/auth.h"

namespace dlaunch::load {
namespace {

// dlaunch-agent's reconnect backoff (rendezvous/client.{h,cpp}).
constexpr double kBackoffFirst = 0.05;
constexpr double kBackoffMax = 2.0;
// Joined agents send a Heartbeat after this long without sending; the
// coordinator's receive timeout is 15 s by default.
constexpr double kHeartbeatIdle = 4.0;
constexpr double kHeartbeatScan = 1.0;
constexpr std::size_t kMaxErrors = 20;
constexpr std::size_t kReceiveBuffer = 64 * 1024;

template <typename T>
std::optional<T> decode_as(const Frame& frame) {
  auto m = proto::decode(frame.type, frame.payload);
  if (!m) return std::nullopt;
  if (auto* typed = std::get_if<T>(&*m)) return std::move(*typed);
  return std::nullopt;
}

std::string type_text(const Frame& frame) {
  return std::to_string(frame.type);
}

}  // namespace

Worker::Worker(const Options& options, std::string secret, std::vector<int> nodes)
    : o_(options),
      secret_(std::move(secret)),
      prober_(loop_, stats_.stats,
              [this](std::uint32_t i, std::vector<net::ProbeOutcome> outcomes) {
                on_probe_done(i, std::move(outcomes));
              }),
      rng_(options.seed * 1000003 + (nodes.empty() ? 0 : nodes.front())),
      receive_buffer_(kReceiveBuffer),
      pid_(::getpid()),
      heartbeat_frame_(proto::encode(proto::Heartbeat{})) {
  // rdzv_load.py's socket is AF_INET: node 0's --host as an IPv4 address.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(o_.host.c_str(), nullptr, &hints, &found) == 0) {
    std::memcpy(&server_, found->ai_addr, sizeof server_);
    server_.sin_port = htons(static_cast<std::uint16_t>(o_.port));
    server_resolved_ = true;
    ::freeaddrinfo(found);
  }
  agents_.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    agents_[i].node = nodes[i];
    agents_[i].backoff = kBackoffFirst;
    if (nodes[i] == o_.fail_node) holds_failure_ = o_.close_all_on_stop;
    agents_[i].blind =
        std::find(o_.blind_nodes.begin(), o_.blind_nodes.end(), nodes[i]) != o_.blind_nodes.end();
  }
  active_ = static_cast<std::int64_t>(agents_.size());
  deadline_ = monotonic_s() + o_.timeout;
  for (const char* name : {"connect_errors", "closed_before_welcome", "heartbeats_sent"})
    stats_.stats.add(name, 0);
}

// --- per-agent actions ------------------------------------------------------

void Worker::finish(std::uint32_t i, const char* outcome, const std::string& error) {
  Agent& a = agents_[i];
  if (a.state == State::done) return;
  if (a.probes > 0) prober_.cancel(i);
  a.probes = 0;
  drop_socket(a);
  a.state = State::done;
  a.outcome = outcome;
  --active_;
  if (!error.empty() && stats_.errors.size() < kMaxErrors)
    stats_.errors.push_back("node " + std::to_string(a.node) + ": " + error);
}

// Closing the socket also takes it out of the epoll set (no dup of it exists).
void Worker::drop_socket(Agent& a) {
  if (a.fd >= 0) {
    ::close(a.fd);
    a.fd = -1;
    ++a.generation;
  }
  a.out.clear();
}

void Worker::connect(std::uint32_t i) {
  Agent& a = agents_[i];
  if (a.state != State::waiting) return;
  ++a.attempts;
  if (!server_resolved_) {
    stats_.stats.add("connect_errors", 1);
    return retry(i, "cannot resolve " + o_.host);
  }
  a.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a.fd < 0) {
    stats_.stats.add("connect_errors", 1);
    return retry(i, strerror(errno));
  }
  ++a.generation;
  if (!bind_node_source(a.fd, reinterpret_cast<const sockaddr*>(&server_), a.node)) {
    stats_.stats.add("connect_errors", 1);
    return retry(i, strerror(errno));
  }
  if (::connect(a.fd, reinterpret_cast<const sockaddr*>(&server_), sizeof server_) != 0 &&
      errno != EINPROGRESS) {
    stats_.stats.add("connect_errors", 1);
    return retry(i, strerror(errno));
  }
  a.state = State::connecting;
  if (!loop_.add(a.fd, token(i))) {
    stats_.stats.add("connect_errors", 1);
    return retry(i, strerror(errno));
  }
}

// A connection that failed or closed before Welcome: try again later, as
// dlaunch-agent does, until the overall timeout.
void Worker::retry(std::uint32_t i, const std::string& why) {
  Agent& a = agents_[i];
  drop_socket(a);
  const double now = monotonic_s();
  if (now >= deadline_) return finish(i, "gave_up", why);
  a.state = State::waiting;
  const double wait = std::min(a.backoff, deadline_ - now);
  a.backoff = std::min(a.backoff * 2, kBackoffMax);
  loop_.at(now + wait, make_token(kAgentKind, 0, i));
}

void Worker::send(std::uint32_t i, std::string data) {
  Agent& a = agents_[i];
  if (a.fd < 0) return;  // finished meanwhile (the failing node's agent, say)
  if (!a.out.empty()) {
    a.out += data;
    return;
  }
  auto n = ::send(a.fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return closed(i, std::string("send: ") + strerror(errno));
    n = 0;
  }
  a.last_send = monotonic_s();
  // The rest goes at the next EPOLLOUT edge (the socket is watched for both).
  if (static_cast<std::size_t>(n) < data.size()) a.out = data.substr(static_cast<std::size_t>(n));
}

void Worker::on_connected(std::uint32_t i, std::uint32_t events) {
  Agent& a = agents_[i];
  if ((events & (EPOLLERR | EPOLLHUP)) != 0) {
    // Only a failed connect needs asking why (a refused one, mostly).
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(a.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      stats_.stats.add("connect_errors", 1);
      return retry(i, strerror(err));
    }
  } else if ((events & EPOLLOUT) == 0) {
    return;
  }
  a.state = State::challenge;
  a.frames = FrameDecoder(kMaxFrame);
  a.nonce = auth::random_bytes(proto::kNonceSize);
  send(i, proto::encode(proto::Hello{proto::kMagic, proto::kVersion, a.nonce}));
}

void Worker::closed(std::uint32_t i, const std::string& why) {
  Agent& a = agents_[i];
  if (a.state == State::done) return;
  if (a.state == State::connecting || a.state == State::challenge || a.state == State::welcome) {
    // Node 0 may be evicting half-open handshakes or not listening yet.
    stats_.stats.add("closed_before_welcome", 1);
    return retry(i, why);
  }
  if (a.stop) return finish(i, "stopped");
  finish(i, "lost", "lost the coordinator after joining: " + why);
}

// Edge-triggered: reads until a read comes back short (the socket is empty
// then, and new data makes a new edge).
void Worker::on_readable(std::uint32_t i) {
  Agent& a = agents_[i];
  const auto generation = a.generation;
  while (true) {
    const auto n = ::recv(a.fd, receive_buffer_.data(), receive_buffer_.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      return closed(i, strerror(errno));
    }
    if (n == 0) return closed(i, "connection closed by peer");
    a.frames.feed({receive_buffer_.data(), static_cast<std::size_t>(n)});
    while (true) {
      auto r = a.frames.next();
      if (r.status == FrameDecoder::Status::need_more) break;
      if (r.status == FrameDecoder::Status::bad) return finish(i, "protocol_error", r.reason);
      on_frame(i, r.frame);
      // Finished, or back to connecting: the rest of this buffer is not for us.
      if (a.state == State::done || a.fd < 0 || a.generation != generation) return;
    }
    if (static_cast<std::size_t>(n) < receive_buffer_.size()) return;
  }
}

void Worker::on_frame(std::uint32_t i, const Frame& frame) {
  Agent& a = agents_[i];
  const double now = wall_s();
  const auto type = static_cast<proto::Type>(frame.type);
  const auto malformed = [&] {
    finish(i, "protocol_error", "type " + type_text(frame) + ": malformed");
  };
  if (type == proto::Type::reject) {
    auto m = decode_as<proto::Reject>(frame);
    if (!m) return malformed();
    return finish(i, "rejected", m->reason);
  }
  if (a.state == State::challenge) {
    if (type != proto::Type::challenge)
      return finish(i, "protocol_error", "expected challenge, got " + type_text(frame));
    auto m = decode_as<proto::Challenge>(frame);
    if (!m) return malformed();
    if (m->magic != proto::kMagic || m->server_nonce.size() != proto::kNonceSize)
      return finish(i, "protocol_error", "bad challenge");
    a.server_nonce = std::move(m->server_nonce);
    proto::Join join;
    join.proof = auth::join_proof(secret_, a.server_nonce, a.nonce);
    join.node_rank = a.node;
    join.nproc = o_.nproc;
    join.host = "load-" + std::to_string(a.node);
    join.pid = pid_;
    a.state = State::welcome;
    return send(i, proto::encode(join));
  }
  if (a.state == State::welcome) {
    if (type != proto::Type::welcome)
      return finish(i, "protocol_error", "expected welcome, got " + type_text(frame));
    auto m = decode_as<proto::Welcome>(frame);
    if (!m) return malformed();
    if (!auth::constant_time_equal(m->proof, auth::welcome_proof(secret_, a.server_nonce, a.nonce)))
      return finish(i, "bad_welcome_proof", "the coordinator's proof is wrong");
    a.state = State::joined;
    stats_.note_time(kFirstWelcome, now);
    stats_.note_time(kLastWelcome, now);
    return;
  }
  on_joined_frame(i, frame, now);
}

void Worker::on_joined_frame(std::uint32_t i, const Frame& frame, double now) {
  Agent& a = agents_[i];
  const auto type = static_cast<proto::Type>(frame.type);
  const auto malformed = [&] {
    finish(i, "protocol_error", "type " + type_text(frame) + ": malformed");
  };
  const auto all = static_cast<std::int64_t>(agents_.size());
  switch (type) {
    case proto::Type::assign: {
      auto m = decode_as<proto::Assign>(frame);
      if (!m) return malformed();
      a.assign = std::move(*m);
      stats_.note_time(kFirstAssign, now);
      stats_.note_time(kLastAssign, now);
      ++assigned_;
      if (!holds_failure_) {
        report_exits(i);
        if (close_all_pending_ && assigned_ == all) close_all();
        return;
      }
      // This process holds the failing node: once every one of its agents
      // has its assignment, the failure goes out, and all of their
      // connections close at the first Stop, while node 0 is still writing
      // Stop to every agent. (Closing them right behind the failure would
      // race it: node 0 could read a close before the failure and rightly
      // report a lost agent first.)
      if (assigned_ == all) {
        for (std::uint32_t f = 0; f < agents_.size(); ++f) {
          if (agents_[f].node == o_.fail_node) {
            report_exits(f);
            break;
          }
        }
      }
      return;
    }
    case proto::Type::stop: {
      auto m = decode_as<proto::Stop>(frame);
      if (!m) return malformed();
      if (m->restart) return;  // our ranks have already exited; the next Assign follows
      a.stop = std::move(*m);
      stats_.note_time(kFirstStop, now);
      stats_.note_time(kLastStop, now);
      if (o_.close_all_on_stop) {
        // A failed job: every agent of this process exits at once, while
        // node 0 is still writing Stop to the others. The Assigns node 0 sent
        // before its Stops may still wait unread on other connections: close
        // once they are all taken in.
        close_all_pending_ = true;
        if (assigned_ == all) close_all();
      }
      return finish(i, "stopped");
    }
    case proto::Type::heartbeat:
      return;
    case proto::Type::probe: {
      auto m = decode_as<proto::Probe>(frame);
      if (!m) return malformed();
      stats_.note_time(kFirstProbe, now);
      ++a.probes;
      if (a.blind) return answer_blind(i, *m);
      return prober_.start(i, a.node, *m);
    }
    default:
      finish(i, "protocol_error", "unexpected message type " + type_text(frame));
  }
}

void Worker::on_probe_done(std::uint32_t i, std::vector<net::ProbeOutcome> outcomes) {
  Agent& a = agents_[i];
  --a.probes;
  if (a.state == State::done || a.fd < 0) return;
  stats_.note_time(kLastProbe, wall_s());
  send(i, proto::encode(proto::ProbeReport{std::move(outcomes)}));
}

// A node whose SYNs are all lost would report each address timed out after
// the Probe's timeout. Answering at once, with no connect, gives node 0 the
// same report without the wait: what is measured is what node 0 does next
// (retry, fail or fall back), not the timeout.
void Worker::answer_blind(std::uint32_t i, const proto::Probe& probe) {
  stats_.stats.add("probe_blind_answers", 1);
  net::ProbeOutcome unreached;
  unreached.error = "timed out (--blind-node)";
  on_probe_done(i, std::vector<net::ProbeOutcome>(probe.addresses.size(), unreached));
}

// Every assigned rank's exit (the failing node's first rank with
// --fail-code), then AgentDone.
void Worker::report_exits(std::uint32_t i) {
  const Agent& a = agents_[i];
  if (!a.assign) return;
  std::string frames;
  for (std::int32_t r = 0; r < a.assign->local_world_size; ++r) {
    const std::int32_t code = a.node == o_.fail_node && r == 0 ? o_.fail_code : 0;
    frames += proto::encode(proto::RankExit{a.assign->rank_offset + r, code, 0});
  }
  frames += proto::encode(proto::AgentDone{a.assign->round, 0});
  send(i, std::move(frames));
}

void Worker::close_all() {
  if (closing_all_) return;
  closing_all_ = true;
  for (std::uint32_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i].state != State::done) finish(i, agents_[i].stop ? "stopped" : "closed_on_stop");
  }
}

// --- the loop ---------------------------------------------------------------

void Worker::on_socket_event(Token t, std::uint32_t events) {
  const auto i = token_index(t);
  Agent& a = agents_[i];
  const auto generation = a.generation;
  if (a.fd < 0 || a.state == State::done || (generation & 0x3fffffffU) != token_generation(t))
    return;
  // As Python's selectors read epoll: an error or hang-up is both readable and writable.
  const bool writable = (events & ~static_cast<std::uint32_t>(EPOLLIN)) != 0;
  const bool readable = (events & ~static_cast<std::uint32_t>(EPOLLOUT)) != 0;
  if (a.state == State::connecting) {
    on_connected(i, events);
  } else if (writable && !a.out.empty()) {
    std::string data = std::move(a.out);
    a.out.clear();
    send(i, std::move(data));
  }
  // An edge is not repeated: what came with it is read now, even right
  // after the connect (node 0 may have closed a half-open handshake at once).
  if (readable && a.fd >= 0 && a.generation == generation && a.state != State::connecting)
    on_readable(i);
}

void Worker::heartbeats(double now) {
  for (std::uint32_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i].state == State::joined && now - agents_[i].last_send >= kHeartbeatIdle) {
      stats_.stats.add("heartbeats_sent", 1);
      send(i, heartbeat_frame_);
    }
  }
}

Summary Worker::run() {
  const double start = monotonic_s();
  for (std::uint32_t i = 0; i < agents_.size(); ++i) {
    double delay = o_.jitter > 0 ? rng_.uniform(0, o_.jitter) : 0;
    // As dlaunch-agent: the probe's scouts connect at once (drawn all the same,
    // so that the others' delays match rdzv_load.py's).
    if (net::is_probe_scout(static_cast<std::size_t>(agents_[i].node),
                            static_cast<std::size_t>(o_.nnodes)))
      delay = 0;
    if (delay != 0) {
      loop_.at(start + delay, make_token(kAgentKind, 0, i));
    } else {
      connect(i);
    }
  }
  double next_beat = monotonic_s() + kHeartbeatScan;
  while (active_ > 0) {
    double now = monotonic_s();
    if (now >= deadline_) {
      for (std::uint32_t i = 0; i < agents_.size(); ++i) finish(i, "timeout");
      break;
    }
    double timeout = std::min(next_beat, deadline_) - now;
    if (loop_.has_timers()) timeout = std::min(timeout, loop_.next_timer() - now);
    for (const auto& ev : loop_.wait(std::max(0.0, timeout))) {
      if (token_kind(ev.data.u64) == Prober::kKind) {
        prober_.on_event(ev.data.u64, ev.events);
      } else {
        on_socket_event(ev.data.u64, ev.events);
      }
    }
    now = monotonic_s();
    Token t = 0;
    while (loop_.pop_due(now, &t)) {
      if (token_kind(t) == Prober::kKind) {
        prober_.on_timer(t);
      } else {
        connect(token_index(t));
      }
    }
    if (now >= next_beat) {
      next_beat = now + kHeartbeatScan;
      heartbeats(now);
    }
  }
  return summary();
}

Summary Worker::summary() const {
  Summary s = stats_;
  s.agents = static_cast<std::int64_t>(agents_.size());
  for (const auto& a : agents_) {
    s.outcomes.add(a.outcome ? a.outcome : "none", 1);
    if (a.stop) s.stop_codes.add(std::to_string(a.stop->exit_code), 1);
    s.attempts += a.attempts;
    if (a.assign) {
      s.assigned.push_back({a.node, a.assign->rank_offset, a.assign->local_world_size,
                            a.assign->world_size, a.assign->nnodes});
    }
  }
  return s;
}

}  // namespace dlaunch::load
