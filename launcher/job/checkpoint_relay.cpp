#include "launcher/job/checkpoint_relay.h"

namespace dlaunch {
namespace {

constexpr std::size_t kBytesPerStep = 1 << 20;

}  // namespace

CheckpointRelay::CheckpointRelay(std::string cache_dir, RendezvousService& server,
                                 std::uint64_t max_bytes)
    : cache_(std::move(cache_dir), {.whole_files = true,
                                    .what = "checkpoint",
                                    .source = "rank 0's host",
                                    .max_bytes = max_bytes}),
      server_(server) {}

Result<void> CheckpointRelay::keep(const proto::FileChunk& chunk) {
  return cache_.write(chunk);
}

void CheckpointRelay::carry(ConnId conn, std::function<void(Carried)> done) {
  carry_.emplace(Carry{conn, DirectoryFollower(cache_.root(), {.set = proto::FileSet::checkpoint}),
                       std::move(done)});
  server_.on_output_space(conn, [this] { pump(); });
  pump();
}

void CheckpointRelay::drop(ConnId conn) {
  if (carrying(conn)) carry_.reset();
}

void CheckpointRelay::pump() {
  if (!carry_) return;
  while (!server_.output_full(carry_->conn)) {
    for (auto& chunk : carry_->files.next(kBytesPerStep)) {
      carry_->files_sent += chunk.complete ? 1 : 0;
      server_.send(carry_->conn, chunk);
    }
    if (!carry_->files.caught_up()) continue;
    const Carried carried{carry_->files_sent, carry_->files.bytes_sent()};
    auto done = std::move(carry_->done);
    server_.on_output_space(carry_->conn, [] {});
    carry_.reset();
    done(carried);
    return;
  }
}

}  // namespace dlaunch
