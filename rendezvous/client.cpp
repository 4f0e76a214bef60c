#include "rendezvous/client.h"

#include "net/probe_scouts.h"

#include <random>

#include "common/log.h"
#include "protocol/agent_notes.h"
#include "protocol/auth.h"
#include "rendezvous/host_endpoints.h"

namespace dlaunch {

RendezvousClient::RendezvousClient(asio::io_context& io, Options options, std::string secret,
                                   proto::Join join, Callbacks callbacks)
    : io_(io),
      options_(std::move(options)),
      secret_(std::move(secret)),
      join_(std::move(join)),
      callbacks_(std::move(callbacks)),
      retry_timer_(io) {}

std::chrono::milliseconds RendezvousClient::jitter_for(int nnodes, int node_rank) {
  if (nnodes <= 1000 || node_rank < 0 ||
      net::is_probe_scout(static_cast<std::size_t>(node_rank), static_cast<std::size_t>(nnodes)))
    return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::min(nnodes / 20, 5000));
}

void RendezvousClient::start() {
  started_ = std::chrono::steady_clock::now();
  deadline_ = started_ + options_.connect_deadline;
  if (options_.first_connect_jitter.count() <= 0) {
    try_connect();
    return;
  }
  // Thousands of agents started together would reach node 0 as one SYN flood:
  // each waits a random part of the jitter before its first try.
  std::random_device seed;
  std::uniform_int_distribution<long long> pick(0, options_.first_connect_jitter.count());
  retry_timer_.expires_after(std::chrono::milliseconds(pick(seed)));
  retry_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) try_connect();
  });
}

void RendezvousClient::try_connect() {
  if (phase_ == Phase::closed) return;
  // Read anew on every try: /etc/hosts may gain the name while we wait.
  const auto endpoints = endpoints_without_nss(options_.host, options_.port);
  if (endpoints.empty()) return retry_later(lookup_failure(options_.host));
  auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
  asio::async_connect(*socket, endpoints, [this, socket](const asio::error_code& cec, const auto&) {
    if (phase_ == Phase::closed) return;
    if (cec) return retry_later(cec.message());
    on_connected(std::move(*socket));
  });
}

void RendezvousClient::retry_later(const std::string& why) {
  last_error_ = why;
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline_) {
    fail("could not reach the rendezvous at " + options_.host + ":" +
         std::to_string(options_.port) + " before the timeout (" + why + ")");
    return;
  }
  // Said once the failures have gone on for a while (a big fleet's first SYNs
  // may be dropped and retried): on the coordinator, this line is all there is
  // to tell an unreachable rendezvous from a slow one.
  if (!reported_unreachable_ && now - started_ >= kReportUnreachableAfter) {
    reported_unreachable_ = true;
    log::warn("cannot connect to ", options_.host, ":", options_.port, ": ", why, " ",
              proto::kRendezvousUnreachableNote);
  } else {
    log::debug("rendezvous ", options_.host, ":", options_.port, " not reachable yet (", why,
               "); retrying");
  }
  auto wait = std::min<std::chrono::steady_clock::duration>(
      backoff_, std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline_ - now));
  backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(2000));
  retry_timer_.expires_after(wait);
  retry_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) try_connect();
  });
}

void RendezvousClient::retry_after_foreign_peer(const std::string& why) {
  auto given_up = std::move(connection_);
  phase_ = Phase::connecting;
  if (given_up) given_up->close(why);
  retry_later(why);
}

void RendezvousClient::on_connected(asio::ip::tcp::socket socket) {
  enable_keepalive(socket.native_handle());
  connection_ = std::make_shared<Connection>(std::move(socket), kMaxFrame,
                                             options_.host + ":" + std::to_string(options_.port));
  phase_ = Phase::challenge;
  agent_nonce_ = auth::random_bytes(proto::kNonceSize);
  connection_->set_receive_timeout(std::chrono::milliseconds(10'000));
  connection_->start({[this](proto::Message&& m) { on_message(std::move(m)); },
                      [this](const std::string& reason) {
                        if (phase_ == Phase::connecting) return;  // one we gave up on
                        if (phase_ == Phase::challenge || phase_ == Phase::welcome) {
                          // Node 0 may be restarting its listener, another
                          // service holds the port for now, or a flood of
                          // strangers evicted this handshake (a Reject would
                          // have come first): keep trying until the deadline.
                          retry_after_foreign_peer(reason);
                          return;
                        }
                        fail("lost the coordinator: " + reason);
                      }});
  if (options_.output_limit) connection_->set_output_limit(options_.output_limit);
  if (on_output_space_) connection_->on_output_space(on_output_space_);
  connection_->send(proto::Hello{proto::kMagic, proto::kVersion, agent_nonce_});
}

void RendezvousClient::on_message(proto::Message&& message) {
  switch (phase_) {
    case Phase::challenge: {
      auto* challenge = std::get_if<proto::Challenge>(&message);
      if (auto* reject = std::get_if<proto::Reject>(&message)) {
        return refused("the coordinator refused this agent: " + reject->reason);
      }
      if (challenge == nullptr || challenge->magic != proto::kMagic ||
          challenge->server_nonce.size() != proto::kNonceSize) {
        // Another service on the port, or node 0's listener not up yet and
        // something else there: keep trying, as for a refused connection.
        return retry_after_foreign_peer("the peer there does not speak the dlaunch protocol");
      }
      join_.proof = auth::join_proof(secret_, challenge->server_nonce, agent_nonce_);
      connection_->send(join_);
      phase_ = Phase::welcome;
      // Remember the nonce pair for the coordinator's proof.
      agent_nonce_ += challenge->server_nonce;
      return;
    }
    case Phase::welcome: {
      if (auto* reject = std::get_if<proto::Reject>(&message)) {
        return refused("the coordinator refused this agent: " + reject->reason);
      }
      auto* welcome = std::get_if<proto::Welcome>(&message);
      const std::string agent_nonce = agent_nonce_.substr(0, proto::kNonceSize);
      const std::string server_nonce = agent_nonce_.substr(proto::kNonceSize);
      if (welcome == nullptr ||
          !auth::constant_time_equal(welcome->proof,
                                     auth::welcome_proof(secret_, server_nonce, agent_nonce))) {
        return refused(
            "the rendezvous peer did not prove the job's secret (wrong --secret-file, or not "
            "our coordinator)");
      }
      phase_ = Phase::joined;
      connection_->set_receive_timeout(options_.heartbeat_timeout);
      connection_->enable_heartbeat(options_.heartbeat_timeout / 3);
      if (callbacks_.on_welcome) callbacks_.on_welcome();
      return;
    }
    case Phase::joined:
      if (callbacks_.on_message) callbacks_.on_message(std::move(message));
      return;
    case Phase::connecting:
    case Phase::closed:
      return;
  }
}

void RendezvousClient::send(const proto::Message& message) {
  if (connection_ && phase_ == Phase::joined) connection_->send(message);
}

void RendezvousClient::send_log_line(std::int32_t rank, proto::Stream stream, std::string_view text,
                                     proto::LineEnd end) {
  if (connection_ && phase_ == Phase::joined) connection_->send_log_line(rank, stream, text, end);
}

void RendezvousClient::on_output_space(std::function<void()> callback) {
  on_output_space_ = std::move(callback);
  if (connection_) connection_->on_output_space(on_output_space_);
}

void RendezvousClient::close(const std::string& reason) {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  retry_timer_.cancel();
  if (connection_) connection_->close_after_flush(reason);
}

void RendezvousClient::refused(const std::string& reason) {
  if (phase_ == Phase::closed) return;
  if (!callbacks_.on_refused) return fail(reason);
  phase_ = Phase::closed;
  retry_timer_.cancel();
  if (connection_) connection_->close(reason);
  callbacks_.on_refused(reason);
}

void RendezvousClient::fail(const std::string& reason) {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  retry_timer_.cancel();
  if (connection_) connection_->close(reason);
  if (callbacks_.on_close) callbacks_.on_close(reason);
}

}  // namespace dlaunch
