#include "bench/rendezvous/load_loop.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace dlaunch::load {
namespace {

double clock_s(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One call hands back at most this many events; the rest wait for the next.
constexpr int kMaxEvents = 1024;

}  // namespace

double monotonic_s() {
  return clock_s(CLOCK_MONOTONIC);
}
double wall_s() {
  return clock_s(CLOCK_REALTIME);
}

Loop::Loop() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {
  if (epoll_fd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + strerror(errno));
  events_.reserve(kMaxEvents);
}

Loop::~Loop() {
  ::close(epoll_fd_);
}

bool Loop::add(int fd, Token token) {
  epoll_event ev{};
  ev.events = kWatch;
  ev.data.u64 = token;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void Loop::at(double when, Token token) {
  timers_.push({when, ++seq_, token});
}

bool Loop::pop_due(double now, Token* token) {
  if (timers_.empty() || timers_.top().when > now) return false;
  *token = timers_.top().token;
  timers_.pop();
  return true;
}

const std::vector<epoll_event>& Loop::wait(double max_wait_s) {
  // Rounded up: a wait that ends just before a timer is due would only spin.
  const int ms = max_wait_s <= 0 ? 0 : static_cast<int>(std::ceil(max_wait_s * 1000.0));
  events_.resize(kMaxEvents);
  const int n = ::epoll_wait(epoll_fd_, events_.data(), kMaxEvents, ms);
  events_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return events_;
}

}  // namespace dlaunch::load
