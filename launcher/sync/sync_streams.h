// `--sync`'s and `--image-file`'s sending side over the agents' connections,
// for every node of a job: one transfer after the other (the image into the
// host's cache, then the directory into the ranks' working directory), each
// the offer, then the pieces of the files the node wants, read from the
// disk and sent while the node's connection has room (the service calls back
// once it has drained, so memory stays bounded by its output limit), and the
// progress line on a terminal. The decisions of one node's transfer are
// SyncSender's; whether the job may start is the job policy's, told through
// `on_end` when a node's sync ends either way.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/sync/sync_manifest.h"
#include "launcher/sync/sync_sender.h"
#include "protocol/messages.h"
#include "rendezvous/service.h"

namespace dlaunch {

class SyncStreams {
 public:
  struct Transfer {
    std::shared_ptr<const SyncManifest> manifest;
    proto::SyncInto into = proto::SyncInto::workdir;
    bool delete_extra = false;
    std::string what = "--sync";  // the option, for messages
  };
  struct Settings {
    std::vector<Transfer> transfers;  // in this order, each once the last is done
    int nnodes = 0;
    bool progress_line = false;  // redraw a status line on stderr (a terminal)
  };
  // A node's transfers ended: every one (`done` sums them), or the one named
  // by `what`, which failed.
  using OnEnd = std::function<void(ConnId, const proto::SyncDone& done, const std::string& what)>;
  using Label = std::function<std::string(int node)>;

  // `server` must outlive the streams.
  SyncStreams(Settings settings, RendezvousService& server, Label label, OnEnd on_end);
  ~SyncStreams();
  SyncStreams(const SyncStreams&) = delete;
  SyncStreams& operator=(const SyncStreams&) = delete;

  // Starts `node`'s transfer on its connection.
  void start(int node, ConnId conn);
  // The node's SyncWant and SyncDone; those of a node not syncing, or on
  // another connection, are ignored.
  void on_want(int node, ConnId conn, const proto::SyncWant& want);
  void on_done(int node, ConnId conn, const proto::SyncDone& done);
  // The job ends: the progress line is cleared.
  void finish();

 private:
  struct NodeSync {
    ConnId conn = 0;
    std::size_t transfer = 0;  // in Settings::transfers
    proto::SyncDone sum = {};  // of the transfers done
    std::uint64_t files_before = 0, files_wanted_before = 0;
    std::uint64_t bytes_before = 0, bytes_wanted_before = 0;
    std::unique_ptr<SyncSender> sender;
    bool ended = false;
    int fd = -1;  // the file being read, and its entry
    std::uint32_t fd_index = 0;
  };
  NodeSync* active(int node, ConnId conn);
  const Transfer& transfer_of(const NodeSync& sync) const { return s_.transfers[sync.transfer]; }
  void begin_transfer(int node, NodeSync& sync);
  void pump(int node);
  void end(int node, const proto::SyncDone& done);
  // A piece's bytes; an error names the path.
  Result<std::string> read_piece(NodeSync& sync, const SyncSender::Piece& piece);
  void show_progress(bool force);

  Settings s_;
  RendezvousService& server_;
  Label label_;
  OnEnd on_end_;
  std::map<int, NodeSync> syncs_;  // by node rank
  std::size_t ended_ = 0;
  bool progress_shown_ = false;
  std::chrono::steady_clock::time_point progress_at_{};
};

}  // namespace dlaunch
