// The agent's side of the rendezvous connection: resolve and connect with
// exponential backoff until a deadline (node 0 may start later than the others),
// run the handshake, verify that the coordinator holds the job's secret too, and
// then hand every message to the owner.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/messages.h"
#include "rendezvous/connection.h"

namespace dlaunch {

class RendezvousClient {
 public:
  struct Callbacks {
    std::function<void()> on_welcome;                  // handshake done, Join accepted so far
    std::function<void(proto::Message&&)> on_message;  // every later message
    std::function<void(const std::string& reason)> on_close;  // lost or timed out
    // The handshake was refused (Reject: a wrong secret, another protocol
    // version) or the peer could not prove the secret: retrying cannot help.
    // Unset: on_close is called instead.
    std::function<void(const std::string& reason)> on_refused = {};
  };
  struct Options {
    std::string host;
    std::uint16_t port = 0;
    std::chrono::milliseconds connect_deadline{600'000};
    std::chrono::milliseconds heartbeat_timeout{15'000};
    // Upper bound of a random wait before the first connect (0: none).
    std::chrono::milliseconds first_connect_jitter{0};
    // Output queued before output_full() (Connection's default unless set).
    std::size_t output_limit = 0;
  };

  // The first-connect jitter of node `node_rank` in a job of `nnodes`: none
  // up to 1,000 nodes, then 50 us per node (0.5 s at 10,000: about the rate
  // node 0 completes handshakes on 2 cores; a shorter spread overflows its
  // accept queue and takes longer), at most 5 s. None for the MASTER_ADDR
  // probe's 64 scouts, node 0 among them (net/probe_scouts.h): they join
  // first, so the probe's first round runs while the others arrive.
  static std::chrono::milliseconds jitter_for(int nnodes, int node_rank);

  RendezvousClient(asio::io_context& io, Options options, std::string secret, proto::Join join,
                   Callbacks callbacks);

  void start();
  void send(const proto::Message& message);
  // send(LogLine{...}) without a copy of the line (Connection::send_log_line).
  void send_log_line(std::int32_t rank, proto::Stream stream, std::string_view text,
                     proto::LineEnd end);
  // True while the rank output queued for the coordinator is at its bound:
  // the agent stops reading its ranks' pipes until on_output_space.
  bool output_full() const { return connection_ && connection_->output_full(); }
  void on_output_space(std::function<void()> callback);
  // Bytes of ordered output (log lines, file chunks) waiting to be written.
  std::size_t output_queued_bytes() const {
    return connection_ ? connection_->output_queued_bytes() : 0;
  }
  void close(const std::string& reason);
  bool connected() const { return connection_ && !connection_->closed(); }

 private:
  void try_connect();
  void retry_later(const std::string& why);
  // The connection was made but what answered is not (yet) the rendezvous.
  void retry_after_foreign_peer(const std::string& why);
  void on_connected(asio::ip::tcp::socket socket);
  void on_message(proto::Message&& message);
  void fail(const std::string& reason);
  void refused(const std::string& reason);  // on_refused, else as fail

  asio::io_context& io_;
  Options options_;
  std::string secret_;
  proto::Join join_;
  Callbacks callbacks_;
  asio::steady_timer retry_timer_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point deadline_;
  static constexpr std::chrono::seconds kReportUnreachableAfter{3};
  bool reported_unreachable_ = false;
  std::chrono::milliseconds backoff_{50};
  std::shared_ptr<Connection> connection_;
  std::string agent_nonce_;
  enum class Phase { connecting, challenge, welcome, joined, closed } phase_ = Phase::connecting;
  std::string last_error_;
  std::function<void()> on_output_space_;
};

}  // namespace dlaunch
