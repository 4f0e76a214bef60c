#include "bench/rendezvous/load_prober.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "bench/rendezvous/source_address.h"

namespace dlaunch::load {
namespace {

constexpr double kFirstResend = 0.2;
constexpr double kMaxTimeout = 2.0;
constexpr double kMinWait = 0.01;
// rdzv_load.py counts connects slower than this (a dropped SYN costs 200 ms or more).
constexpr double kSlowMs = 150;
constexpr std::size_t kMaxError = 200;

// A slot of `slots`: a freed one if any, else a new one at the end.
template <typename T>
std::uint32_t take_slot(std::vector<T>& slots, std::vector<std::uint32_t>& free) {
  if (free.empty()) {
    slots.emplace_back();
    return static_cast<std::uint32_t>(slots.size() - 1);
  }
  const std::uint32_t slot = free.back();
  free.pop_back();
  return slot;
}

// As Python words an OSError, so that reports read the same from both loads.
std::string os_error(int err) {
  return "[Errno " + std::to_string(err) + "] " + strerror(err);
}

bool resolve(const std::string& host, int port, sockaddr_storage* out, socklen_t* len) {
  *out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    *len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    *len = sizeof(sockaddr_in6);
    return true;
  }
  // A name (candidates are addresses; this is for a hand-made test).
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  std::memcpy(out, found->ai_addr, found->ai_addrlen);
  *len = found->ai_addrlen;
  ::freeaddrinfo(found);
  return true;
}

}  // namespace

Prober::~Prober() {
  for (auto& a : attempts_) {
    if (a.fd >= 0) ::close(a.fd);
  }
}

void Prober::start(std::uint32_t owner, int node, const proto::Probe& probe) {
  if (probe.addresses.empty()) {
    done_(owner, {});
    return;
  }
  const std::uint32_t r = take_slot(runs_, free_runs_);
  ++active_runs_;
  Run& run = runs_[r];
  run.used = true;
  run.owner = owner;
  run.node = node;
  run.outcomes.assign(probe.addresses.size(), {});
  run.pending = probe.addresses.size();
  run.attempts.clear();
  const double now = monotonic_s();
  const double timeout = std::min(probe.timeout_ms / 1000.0, kMaxTimeout);
  for (std::size_t k = 0; k < probe.addresses.size(); ++k) {
    const std::uint32_t i = take_slot(attempts_, free_attempts_);
    Attempt& a = attempts_[i];
    a.used = true;
    ++a.generation;
    a.run = r;
    a.index = k;
    a.started = now;
    a.deadline = now + timeout;
    a.wait = kFirstResend;
    runs_[r].attempts.push_back(i);
  }
  // Started once every attempt exists: one that fails at once may end the run.
  const auto ids = runs_[r].attempts;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    Attempt& a = attempts_[ids[k]];
    if (!resolve(probe.addresses[k], probe.port, &a.address, &a.address_len)) {
      finish(ids[k], false, "cannot resolve");
      continue;
    }
    connect(ids[k]);
  }
}

void Prober::cancel(std::uint32_t owner) {
  if (active_runs_ == 0) return;
  for (std::uint32_t r = 0; r < runs_.size(); ++r) {
    Run& run = runs_[r];
    if (!run.used || run.owner != owner) continue;
    for (auto i : run.attempts) {
      if (attempts_[i].used && attempts_[i].run == r) release(i);
    }
    run.used = false;
    free_runs_.push_back(r);
    --active_runs_;
  }
}

Prober::Attempt* Prober::live(Token token, bool timer) {
  const auto i = token_index(token);
  if (i >= attempts_.size()) return nullptr;
  Attempt& a = attempts_[i];
  const auto generation = timer ? a.timer_generation : a.generation;
  if (!a.used || (generation & 0x3fffffffU) != token_generation(token)) return nullptr;
  return &a;
}

void Prober::connect(std::uint32_t i) {
  Attempt& a = attempts_[i];
  ++a.generation;
  a.step = Step::connecting;
  a.fd = ::socket(a.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a.fd < 0) return finish(i, false, os_error(errno));
  if (!bind_node_source(a.fd, reinterpret_cast<const sockaddr*>(&a.address), runs_[a.run].node))
    return finish(i, false, os_error(errno));
  const bool now_connected =
      ::connect(a.fd, reinterpret_cast<const sockaddr*>(&a.address), a.address_len) == 0;
  if (!now_connected && errno != EINPROGRESS) return finish(i, false, os_error(errno));
  if (!loop_.add(a.fd, token(i))) return finish(i, false, os_error(errno));
  if (now_connected) return await_answer(i, false);
  const double now = monotonic_s();
  loop_.at(now + std::max(kMinWait, std::min(a.wait, a.deadline - now)), timer_token(i));
}

// Connected: node 0's agent answers with one byte once it has accepted the
// connection. No fresh SYN from here on, as in dlaunch-agent. `readable`: the
// edge that told of the connect told of the byte too, and no other will come.
void Prober::await_answer(std::uint32_t i, bool readable) {
  Attempt& a = attempts_[i];
  a.step = Step::answering;
  const double now = monotonic_s();
  loop_.at(now + std::max(kMinWait, a.deadline - now), timer_token(i));
  if (readable) read_answer(i);
}

void Prober::read_answer(std::uint32_t i) {
  char answer = 0;
  const auto n = ::recv(attempts_[i].fd, &answer, 1, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  // Its byte, or its close: either way node 0's agent accepted the connection.
  if (n >= 0) return finish(i, true, "");
  finish(i, false, os_error(errno));
}

void Prober::on_event(Token t, std::uint32_t events) {
  Attempt* a = live(t, false);
  if (a == nullptr) return;
  const auto i = token_index(t);
  const bool readable = (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  if (a->step == Step::answering) {
    if (readable) read_answer(i);
    return;
  }
  if ((events & (EPOLLERR | EPOLLHUP)) != 0) {
    // Only a failed connect needs asking why (a refused one, mostly).
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return finish(i, false, os_error(err));
  } else if ((events & EPOLLOUT) == 0) {
    return;
  }
  await_answer(i, readable);
}

void Prober::on_timer(Token t) {
  Attempt* a = live(t, true);
  if (a == nullptr) return;
  const auto i = token_index(t);
  if (a->step == Step::connecting && monotonic_s() < a->deadline) {
    // Still no SYN-ACK: node 0's accept queue may have dropped the SYN, which
    // the kernel would resend only after a second. A new connection sends one now.
    stats_.add("probe_resends", 1);
    a->wait *= 2;
    ::close(a->fd);
    a->fd = -1;
    return connect(i);
  }
  finish(i, false, "timed out");
}

void Prober::finish(std::uint32_t i, bool reached, std::string error) {
  Attempt& a = attempts_[i];
  const double took_s = monotonic_s() - a.started;
  const std::uint32_t r = a.run;
  auto& outcome = runs_[r].outcomes[a.index];
  outcome.reached = reached;
  outcome.rtt_us = reached ? static_cast<std::int32_t>(took_s * 1e6) : 0;
  if (error.size() > kMaxError) error.resize(kMaxError);
  outcome.error = std::move(error);
  stats_.add("probe_connects", 1);
  stats_.add("probe_connect_ms", took_s * 1000);
  if (took_s * 1000 > kSlowMs) stats_.add("probe_connects_over_150ms", 1);
  release(i);
  Run& run = runs_[r];
  if (--run.pending > 0) return;
  run.used = false;
  free_runs_.push_back(r);
  --active_runs_;
  const auto owner = run.owner;
  auto outcomes = std::move(run.outcomes);
  done_(owner, std::move(outcomes));
}

// Closing the socket also takes it out of the epoll set (no dup of it exists).
void Prober::release(std::uint32_t i) {
  Attempt& a = attempts_[i];
  if (a.fd >= 0) ::close(a.fd);
  a.fd = -1;
  a.used = false;
  ++a.generation;
  ++a.timer_generation;
  free_attempts_.push_back(i);
}

}  // namespace dlaunch::load
