#include "agent/prober.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include "agent/socket_deadline.h"
#include "rendezvous/host_endpoints.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

struct Attempt;

// Once one address answered, the others get this long (or 4 connect times of
// the slowest answer so far, if longer) before they count as not reached: a
// firewall that drops packets to one candidate must not hold every job's
// start for the whole timeout, while an address that answers at all answers
// within a few round trips.
constexpr std::chrono::milliseconds kSettleAfterAnswer{500};

// A connect still pending after this long starts over with a fresh SYN (and
// the wait doubles): when thousands of nodes probe node 0 at once and its
// accept queue overflows, the kernel drops SYNs and resends them only after a
// second, which would cost the job's start a second, or, under the settle
// rule above, count a good address as not reached.
constexpr std::chrono::milliseconds kFirstResend{200};

// What every attempt shares: the results so far and who to tell at the end.
struct ProbeRun {
  explicit ProbeRun(asio::io_context& io) : settle(io) {}

  std::vector<net::ProbeOutcome> outcomes;
  std::vector<std::weak_ptr<Attempt>> attempts;
  std::size_t pending = 0;
  net::Interfaces interfaces;
  ProbeDone done;
  asio::steady_timer settle;
  bool settling = false;

  void finished_one() {
    if (--pending > 0) return;
    settle.cancel();
    done(std::move(outcomes));
  }
  void answered(std::chrono::microseconds rtt);
};

// The interface the routing table sends traffic to `address` by, without a
// packet on the wire (a UDP connect only picks the source address): for an
// address that could not be reached, where the connection would have left.
std::string route_interface(const std::string& address, const net::Interfaces& interfaces) {
  asio::error_code ec;
  const auto to = asio::ip::make_address(address, ec);
  if (ec) return "";
  asio::io_context io;
  asio::ip::udp::socket socket(io);
  socket.open(to.is_v6() ? asio::ip::udp::v6() : asio::ip::udp::v4(), ec);
  if (!ec) socket.connect({to, 9}, ec);
  if (ec) return "";
  const auto local = socket.local_endpoint(ec);
  if (ec) return "";
  const auto* itf = net::interface_with_address(interfaces, local.address().to_string());
  return itf ? itf->name : "";
}

struct Attempt : std::enable_shared_from_this<Attempt> {
  Attempt(asio::io_context& io, std::shared_ptr<ProbeRun> r, std::size_t i)
      : run(std::move(r)), index(i), socket(io), deadline(io.get_executor()), resend(io) {}

  std::shared_ptr<ProbeRun> run;
  std::size_t index;
  asio::ip::tcp::socket socket;
  SocketDeadline deadline;
  asio::steady_timer resend;
  std::vector<asio::ip::tcp::endpoint> endpoints;
  int tries = 0;  // a completion of an earlier try than this is stale
  char answer = 0;
  std::chrono::milliseconds resend_after = kFirstResend;
  Clock::time_point started = Clock::now();
  bool gave_up = false;  // another address answered and this one did not in time
  bool over = false;

  std::string target;

  void start(const std::string& address, int port, std::chrono::milliseconds timeout) {
    target = address;
    deadline.arm(socket, timeout, shared_from_this());
    endpoints = endpoints_without_nss(address, port);
    if (endpoints.empty()) return finish(asio::error::host_not_found, "cannot resolve");
    connect();
  }

  void connect() {
    if (over || deadline.expired() || gave_up) return;
    const int this_try = ++tries;
    asio::error_code ignored;
    socket.close(ignored);  // an earlier try's completion comes back aborted, and stale
    auto self = shared_from_this();
    asio::async_connect(
        socket, endpoints,
        [self, this_try](const asio::error_code& ec, const asio::ip::tcp::endpoint&) {
          if (this_try != self->tries) return;
          if (ec) return self->finish(ec, "");
          self->await_answer();
        });
    resend.expires_after(resend_after);
    resend_after *= 2;
    resend.async_wait([self, this_try](const asio::error_code& ec) {
      if (!ec && this_try == self->tries) self->connect();
    });
  }

  // Connected: node 0's agent answers with one byte once it has accepted the
  // connection (ProbeListener). A connection is not resent from here on: a
  // busy listener answers late, and another connection would only queue
  // behind this one.
  void await_answer() {
    resend.cancel();
    auto self = shared_from_this();
    asio::async_read(socket, asio::buffer(&answer, 1),
                     [self](const asio::error_code& ec, std::size_t) {
                       // The listener may also have closed: it did accept.
                       self->finish(ec == asio::error::eof ? asio::error_code{} : ec, "");
                     });
  }

  void finish(const asio::error_code& ec, const char* what) {
    if (over) return;
    over = true;
    deadline.cancel();
    resend.cancel();
    auto& out = run->outcomes[index];
    if (!ec && !deadline.expired() && !gave_up) {
      out.reached = true;
      out.rtt_us = static_cast<std::int32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count());
      asio::error_code local_ec;
      const auto local = socket.local_endpoint(local_ec);
      if (!local_ec) {
        auto address = local.address();
        if (address.is_v6() && address.to_v6().is_v4_mapped())
          address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
        if (const auto* itf = net::interface_with_address(run->interfaces, address.to_string()))
          out.interface = itf->name;
      }
      run->answered(std::chrono::microseconds(out.rtt_us));
    } else if (gave_up) {
      out.error = "no answer (another address answered)";
    } else if (deadline.expired()) {
      out.error = "timed out";
    } else {
      out.error = *what ? std::string(what) : connect_failure(ec);
    }
    if (!out.reached && out.interface.empty())
      out.interface = route_interface(target, run->interfaces);
    asio::error_code ignored;
    socket.close(ignored);  // our side closes first: see ProbeListener
    run->finished_one();
  }

  void give_up() {
    if (over) return;
    gave_up = true;
    asio::error_code ignored;
    socket.close(ignored);
  }
};

void ProbeRun::answered(std::chrono::microseconds rtt) {
  if (settling || pending <= 1) return;
  settling = true;
  const auto wait = std::max<std::chrono::microseconds>(kSettleAfterAnswer, 4 * rtt);
  settle.expires_after(wait);
  // Holds the attempts weakly: an attempt that finished on its own is gone.
  settle.async_wait([held = attempts](const asio::error_code& ec) {
    if (ec) return;
    for (const auto& weak : held) {
      if (auto attempt = weak.lock()) attempt->give_up();
    }
  });
}

}  // namespace

void probe_addresses(asio::io_context& io, const proto::Probe& probe,
                     const net::Interfaces& interfaces, ProbeDone done) {
  auto run = std::make_shared<ProbeRun>(io);
  run->outcomes.resize(probe.addresses.size());
  run->pending = probe.addresses.size();
  run->interfaces = interfaces;
  run->done = std::move(done);
  if (probe.addresses.empty()) {
    asio::post(io, [run] { run->done({}); });
    return;
  }
  std::vector<std::shared_ptr<Attempt>> attempts;
  for (std::size_t i = 0; i < probe.addresses.size(); ++i) {
    attempts.push_back(std::make_shared<Attempt>(io, run, i));
    run->attempts.push_back(attempts.back());
  }
  for (std::size_t i = 0; i < attempts.size(); ++i)
    attempts[i]->start(probe.addresses[i], probe.port, std::chrono::milliseconds(probe.timeout_ms));
}

}  // namespace dlaunch
