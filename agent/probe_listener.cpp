#include "agent/probe_listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <memory>

#include "rendezvous/accept_queued.h"

namespace dlaunch {
namespace {

bool open_on(asio::ip::tcp::acceptor& acceptor, const asio::ip::tcp::endpoint& endpoint) {
  asio::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && endpoint.address().is_v6()) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  // Thousands of agents probe node 0 at once: take the kernel's largest backlog.
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  // accept() below is called until the queue is empty: it must not block.
  if (!ec) acceptor.native_non_blocking(true, ec);
  if (!ec) return true;
  asio::error_code ignored;
  acceptor.close(ignored);
  return false;
}

}  // namespace

struct ProbeListener::Held {
  explicit Held(asio::ip::tcp::socket s) : socket(std::move(s)), expiry(socket.get_executor()) {}
  asio::ip::tcp::socket socket;
  asio::steady_timer expiry;
  std::list<std::shared_ptr<Held>>::iterator pos;
  bool released = false;
};

ProbeListener::ProbeListener(asio::io_context& io, std::uint16_t wanted)
    : ProbeListener(io, wanted, Limits{}) {}

ProbeListener::ProbeListener(asio::io_context& io, std::uint16_t wanted, Limits limits)
    : state_(std::make_shared<State>(io, limits)) {
  auto open = [this](std::uint16_t port) {
    return open_on(state_->acceptor, {asio::ip::address_v6::any(), port}) ||
           open_on(state_->acceptor, {asio::ip::address_v4::any(), port});
  };
  if (!(wanted != 0 && open(wanted)) && !open(0)) return;
  asio::error_code ec;
  port_ = state_->acceptor.local_endpoint(ec).port();
  if (ec) {
    port_ = 0;
    return;
  }
  // One buffer for every connection (drain). The handlers run on this one
  // io_context thread, so no two reads fill it at once.
  state_->buffer = std::make_shared<std::array<char, 64 * 1024>>();
  accept(state_);
}

// Accepts every connection the kernel has queued at each wake-up
// (accept_queued.h) and answers each with one byte; a prober closes once it
// has it, and the connection is read (and discarded) until then. At 10,000
// nodes node 0's agent accepts 10,000 or more probes within a second; when it
// falls behind, the accept queue (net.core.somaxconn) overflows and the kernel
// drops SYNs, which cost their prober a resend.
void ProbeListener::accept(std::shared_ptr<State> state) {
  auto& s = *state;
  s.acceptor.async_wait(
      asio::socket_base::wait_read, [state = std::move(state)](const asio::error_code& ec) mutable {
        if (ec == asio::error::operation_aborted || !state->acceptor.is_open()) return;
        const auto failed = accept_queued(
            state->acceptor, kAcceptsPerWake,
            [&state](asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint&) {
              // The answer a prober waits for: proof that this process (not just
              // a kernel's SYN-ACK) took the connection, and what lets the
              // coordinator bound the connections queued here (JobPolicy's
              // window). The prober closes only once it has it; a bulk test of
              // `dlaunch check` writes until it is done: either way, read on
              // until the peer closes.
              (void)::send(socket.native_handle(), &kProbeAnswer, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
              hold(state, std::move(socket));
            });
        // An error (out of descriptors, say) stops this batch: the connections
        // left queued wait, and their probers' own timeouts cover the pause.
        if (ec || failed) return pause_then_accept(std::move(state));
        accept(std::move(state));
      });
}

// Held until its peer closes or its lifetime ends; at max_open the oldest,
// answered long ago, gives way, so that strangers holding connections cannot
// keep a real probe (or node 0's descriptors) out.
void ProbeListener::hold(const std::shared_ptr<State>& state, asio::ip::tcp::socket socket) {
  if (state->open.size() >= state->limits.max_open) release(*state, *state->open.front());
  auto held = std::make_shared<Held>(std::move(socket));
  held->pos = state->open.insert(state->open.end(), held);
  held->expiry.expires_after(state->limits.lifetime);
  held->expiry.async_wait([state, weak = std::weak_ptr<Held>(held)](const asio::error_code& ec) {
    auto h = weak.lock();
    if (!ec && h) release(*state, *h);
  });
  drain(state, std::move(held));
}

// What arrives is read and thrown away, into the one shared buffer: a buffer
// zeroed per accept cost node 0's agent 64 KiB of memset for each of the
// 20,000 probes of a 10,000-node job.
void ProbeListener::drain(std::shared_ptr<State> state, std::shared_ptr<Held> held) {
  auto& socket = held->socket;
  socket.async_read_some(asio::buffer(*state->buffer),
                         [state, held](const asio::error_code& ec, std::size_t) mutable {
                           if (held->released) return;
                           if (ec) return release(*state, *held);
                           drain(std::move(state), std::move(held));
                         });
}

void ProbeListener::release(State& state, Held& held) {
  if (held.released) return;
  held.released = true;
  asio::error_code ignored;
  held.socket.close(ignored);
  held.expiry.cancel();
  state.open.erase(held.pos);  // may free `held` once its handlers have run
}

void ProbeListener::pause_then_accept(std::shared_ptr<State> state) {
  ++state->accept_failures;
  auto& pause = state->pause;
  pause.expires_after(kPauseAfterFailure);
  pause.async_wait([state = std::move(state)](const asio::error_code& ec) mutable {
    if (ec || !state->acceptor.is_open()) return;
    accept(std::move(state));
  });
}

void ProbeListener::close() {
  asio::error_code ignored;
  state_->acceptor.close(ignored);
  state_->pause.cancel();
}

}  // namespace dlaunch
