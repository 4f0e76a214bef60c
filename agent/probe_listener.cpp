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

void discard(std::shared_ptr<asio::ip::tcp::socket> socket, ProbeListener::Buffer buffer) {
  auto& s = *socket;
  auto& b = *buffer;
  s.async_read_some(asio::buffer(b), [socket = std::move(socket), buffer = std::move(buffer)](
                                         const asio::error_code& ec, std::size_t) mutable {
    if (ec) {
      asio::error_code ignored;
      socket->close(ignored);
      return;
    }
    discard(std::move(socket), std::move(buffer));
  });
}

}  // namespace

ProbeListener::ProbeListener(asio::io_context& io, std::uint16_t wanted)
    : state_(std::make_shared<State>(io)) {
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
  // One buffer for every connection: what is read is thrown away, and a
  // buffer zeroed per accept cost node 0's agent 64 KiB of memset for each of
  // the 20,000 probes of a 10,000-node job. The handlers run on this one
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
              discard(std::make_shared<asio::ip::tcp::socket>(std::move(socket)), state->buffer);
            });
        // An error (out of descriptors, say) stops this batch: the connections
        // left queued wait, and their probers' own timeouts cover the pause.
        if (ec || failed) return pause_then_accept(std::move(state));
        accept(std::move(state));
      });
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
