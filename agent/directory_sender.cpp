#include "agent/directory_sender.h"

#include "common/log.h"

namespace dlaunch {
namespace {

constexpr std::size_t kQuietBelow = 512 * 1024;  // queued output bytes
constexpr std::size_t kFlushQueue = 4 << 20;
constexpr auto kFlushLimit = std::chrono::seconds(30);

}  // namespace

DirectorySender::DirectorySender(asio::io_context& io, std::string root,
                                 DirectoryFollower::Options options, Pace pace, std::string flag,
                                 std::function<RendezvousClient*()> client)
    : follower_(std::move(root), options),
      pace_(pace),
      flag_(std::move(flag)),
      client_(std::move(client)),
      timer_(io) {}

void DirectorySender::start() {
  if (started_) return;
  started_ = true;
  tick();
}

void DirectorySender::send(std::size_t budget) {
  RendezvousClient* client = client_();
  if (!client) return;
  for (auto& chunk : follower_.next(budget)) client->send(std::move(chunk));
}

void DirectorySender::stop() {
  stopped_ = true;
  timer_.cancel();
}

void DirectorySender::tick() {
  if (done_ || stopped_) return;  // flushing, or finished
  RendezvousClient* client = client_();
  if (client && client->connected() && client->output_queued_bytes() < kQuietBelow)
    send(pace_.bytes_per_tick);
  timer_.expires_after(pace_.period);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) tick();
  });
}

void DirectorySender::flush_then(std::function<void()> done) {
  timer_.cancel();
  done_ = std::move(done);
  flush_step(std::chrono::steady_clock::now() + kFlushLimit);
}

void DirectorySender::flush_step(std::chrono::steady_clock::time_point deadline) {
  RendezvousClient* client = client_();
  const bool connected = client && client->connected();
  if (connected && client->output_queued_bytes() < kFlushQueue) send(kFlushQueue);
  const bool finished = !connected || follower_.caught_up();
  if (!finished && std::chrono::steady_clock::now() >= deadline) {
    log::warn(flag_, ": not every file was sent within ",
              std::chrono::duration_cast<std::chrono::seconds>(kFlushLimit).count(),
              " s of the ranks' end; the copy may be incomplete");
  }
  if (finished || std::chrono::steady_clock::now() >= deadline) {
    auto done = std::move(done_);
    done_ = nullptr;
    done();
    tick();  // a restart round goes on sending
    return;
  }
  timer_.expires_after(std::chrono::milliseconds(5));
  timer_.async_wait([this, deadline](const asio::error_code& ec) {
    if (!ec) flush_step(deadline);
  });
}

}  // namespace dlaunch
