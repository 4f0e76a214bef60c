// The one event loop of a load process: epoll over every socket and a heap
// of timers. Plain epoll, not Asio: thousands of simulated agents share a core
// with the node 0 being measured, so each event should cost its system call
// and little else. Sockets are watched edge-triggered for both directions
// from the start (kWatch): one epoll_ctl per socket, none to switch between
// waiting for the connect and for data, at the price of reading until a
// short read and of handling every event bit that comes with an edge.
//
// Sockets and timers carry a token that the owner chooses (what kind of
// thing, which one, which generation of it). A token is never checked here:
// an owner that closes a socket or moves on bumps its generation and ignores
// events and timers of the old one, as epoll may still report them in the
// batch being handled.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <queue>
#include <vector>

namespace dlaunch::load {

using Token = std::uint64_t;

// kind (2 bits) | generation (30 bits) | index (32 bits)
inline Token make_token(unsigned kind, std::uint32_t generation, std::uint32_t index) {
  return (static_cast<Token>(kind) << 62) | (static_cast<Token>(generation & 0x3fffffffU) << 32) |
         index;
}
inline unsigned token_kind(Token t) {
  return static_cast<unsigned>(t >> 62);
}
inline std::uint32_t token_generation(Token t) {
  return static_cast<std::uint32_t>(t >> 32) & 0x3fffffffU;
}
inline std::uint32_t token_index(Token t) {
  return static_cast<std::uint32_t>(t);
}

// Seconds on the monotonic clock (time.monotonic()) and of the wall clock
// (time.time(), for the summary's timeline, which scale.py reads against its own).
double monotonic_s();
double wall_s();

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  static constexpr std::uint32_t kWatch = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  // Errors are left to the caller (an fd that cannot be watched is one more
  // failed connection). Closing the fd takes it out again: none is dup'ed.
  bool add(int fd, Token token);

  void at(double when, Token token);
  bool has_timers() const { return !timers_.empty(); }
  double next_timer() const { return timers_.top().when; }
  // The next timer due at `now` (removing it); false when none is.
  bool pop_due(double now, Token* token);

  // Waits at most `max_wait_s` for socket events.
  const std::vector<epoll_event>& wait(double max_wait_s);

 private:
  struct Timer {
    double when;
    std::uint64_t seq;  // FIFO among timers due at the same time, as rdzv_load.py's heap
    Token token;
    bool operator>(const Timer& o) const { return when != o.when ? when > o.when : seq > o.seq; }
  };

  int epoll_fd_ = -1;
  std::vector<epoll_event> events_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::uint64_t seq_ = 0;
};

}  // namespace dlaunch::load
