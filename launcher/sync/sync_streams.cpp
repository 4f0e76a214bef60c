#include "launcher/sync/sync_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/console.h"
#include "common/log.h"
#include "common/text.h"

namespace dlaunch {

SyncStreams::SyncStreams(Settings settings, RendezvousService& server, Label label, OnEnd on_end)
    : s_(std::move(settings)),
      server_(server),
      label_(std::move(label)),
      on_end_(std::move(on_end)) {}

SyncStreams::~SyncStreams() {
  for (auto& [node, sync] : syncs_)
    if (sync.fd >= 0) ::close(sync.fd);
}

void SyncStreams::start(int node, ConnId conn) {
  auto& sync = syncs_[node];
  sync.conn = conn;
  server_.on_output_space(conn, [this, node] { pump(node); });
  begin_transfer(node, sync);
}

void SyncStreams::begin_transfer(int node, NodeSync& sync) {
  const auto& transfer = transfer_of(sync);
  if (sync.fd >= 0) ::close(sync.fd);
  sync.fd = -1;
  sync.sender = std::make_unique<SyncSender>(*transfer.manifest, transfer.delete_extra);
  log::debug(transfer.what, " to ", label_(node), ": offering ", transfer.manifest->entries.size(),
             " entries");
  pump(node);
}

SyncStreams::NodeSync* SyncStreams::active(int node, ConnId conn) {
  auto it = syncs_.find(node);
  if (it == syncs_.end() || it->second.ended || it->second.conn != conn) return nullptr;
  return &it->second;
}

void SyncStreams::on_want(int node, ConnId conn, const proto::SyncWant& want) {
  auto* sync = active(node, conn);
  if (sync == nullptr) return;
  if (auto taken = sync->sender->on_want(want); !taken) {
    end(node, proto::SyncDone{0, 0, 0, "its agent " + taken.error()});
    return;
  }
  pump(node);
}

void SyncStreams::on_done(int node, ConnId conn, const proto::SyncDone& done) {
  auto* sync = active(node, conn);
  if (sync == nullptr) return;
  if (!done.error.empty() || sync->transfer + 1 >= s_.transfers.size()) return end(node, done);
  sync->sum.files_written += done.files_written;
  sync->sum.bytes_received += done.bytes_received;
  sync->sum.deleted += done.deleted;
  sync->files_before += sync->sender->files_sent();
  sync->files_wanted_before += sync->sender->files_wanted();
  sync->bytes_before += sync->sender->bytes_sent();
  sync->bytes_wanted_before += sync->sender->bytes_wanted();
  ++sync->transfer;
  begin_transfer(node, *sync);
}

void SyncStreams::pump(int node) {
  auto it = syncs_.find(node);
  if (it == syncs_.end() || it->second.ended) return;
  auto& sync = it->second;
  while (!server_.output_full(sync.conn)) {
    if (auto offer = sync.sender->next_offer()) {
      offer->into = transfer_of(sync).into;
      server_.send(sync.conn, *offer);
      continue;
    }
    const auto piece = sync.sender->next_piece();
    if (!piece) break;
    auto data = read_piece(sync, *piece);
    if (!data) {
      end(node, proto::SyncDone{0, 0, 0, data.error()});
      return;
    }
    server_.send(sync.conn, proto::SyncData{piece->index, piece->offset, std::move(*data)});
  }
  show_progress(false);
}

Result<std::string> SyncStreams::read_piece(NodeSync& sync, const SyncSender::Piece& piece) {
  const auto& manifest = *transfer_of(sync).manifest;
  const auto& entry = manifest.entries[piece.index];
  const std::string path =
      manifest.source_file.empty() ? manifest.root + "/" + entry.path : manifest.source_file;
  if (sync.fd < 0 || sync.fd_index != piece.index) {
    if (sync.fd >= 0) ::close(sync.fd);
    sync.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    sync.fd_index = piece.index;
    if (sync.fd < 0) return fail(path + ": " + std::strerror(errno));
  }
  std::string data(piece.length, '\0');
  std::size_t got = 0;
  while (got < piece.length) {
    const ssize_t n = ::pread(sync.fd, data.data() + got, piece.length - got,
                              static_cast<off_t>(piece.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(path + ": " + std::strerror(errno));
    if (n == 0) return fail(path + ": it became shorter while syncing");
    got += static_cast<std::size_t>(n);
  }
  if (piece.offset + piece.length >= entry.size) {
    ::close(sync.fd);
    sync.fd = -1;
  }
  return data;
}

void SyncStreams::end(int node, const proto::SyncDone& done) {
  auto& sync = syncs_[node];
  sync.ended = true;
  if (sync.fd >= 0) ::close(sync.fd);
  sync.fd = -1;
  ++ended_;
  show_progress(true);
  proto::SyncDone sum = done;
  if (done.error.empty()) {
    sum.files_written += sync.sum.files_written;
    sum.bytes_received += sync.sum.bytes_received;
    sum.deleted += sync.sum.deleted;
  }
  on_end_(sync.conn, sum, transfer_of(sync).what);
}

void SyncStreams::finish() {
  if (progress_shown_ && s_.progress_line) console().status("");
  s_.progress_line = false;
}

// One line on a terminal, redrawn at most 10 times a second: each host's
// files and bytes sent of those it wanted (all hosts summed past three).
void SyncStreams::show_progress(bool force) {
  if (!s_.progress_line) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - progress_at_ < std::chrono::milliseconds(100)) return;
  progress_at_ = now;
  if (ended_ >= static_cast<std::size_t>(s_.nnodes)) {
    if (progress_shown_) console().status("");
    s_.progress_line = false;
    return;
  }
  std::string text =
      "sync " + std::to_string(ended_) + "/" + std::to_string(s_.nnodes) + " hosts done";
  std::uint64_t files = 0, files_wanted = 0, bytes = 0, bytes_wanted = 0;
  for (const auto& [node, sync] : syncs_) {
    const auto node_files = sync.files_before + sync.sender->files_sent();
    const auto node_files_wanted = sync.files_wanted_before + sync.sender->files_wanted();
    const auto node_bytes = sync.bytes_before + sync.sender->bytes_sent();
    const auto node_bytes_wanted = sync.bytes_wanted_before + sync.sender->bytes_wanted();
    files += node_files;
    files_wanted += node_files_wanted;
    bytes += node_bytes;
    bytes_wanted += node_bytes_wanted;
    if (s_.nnodes > 3) continue;
    text += " | " + label_(node) + " ";
    if (sync.ended) {
      text += "done";
    } else if (!sync.sender->wants_complete()) {
      text += "comparing";
    } else if (sync.sender->all_sent() && transfer_of(sync).into == proto::SyncInto::image_cache) {
      text += "loading the image";
    } else {
      text += std::to_string(node_files) + "/" + std::to_string(node_files_wanted) + " files " +
              human_bytes(node_bytes) + "/" + human_bytes(node_bytes_wanted);
    }
  }
  if (s_.nnodes > 3) {
    text += ", " + std::to_string(files) + "/" + std::to_string(files_wanted) + " files, " +
            human_bytes(bytes) + "/" + human_bytes(bytes_wanted);
  }
  console().status("dlaunch: " + text);
  progress_shown_ = true;
}

}  // namespace dlaunch
