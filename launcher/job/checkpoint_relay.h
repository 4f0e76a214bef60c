// --checkpoint-dir on the coordinator's side. It keeps a copy of rank 0's
// checkpoint under <job dir>/checkpoint as each file is completed on node 0
// (so the copy survives node 0's death, the case that needs it), and carries
// that copy to a new node 0 over the agent's connection before the new
// round's Assign: through bastions and via = "ssh" as every message does, and
// with memory bounded by the connection's output limit whatever the sizes.
// Each file appears whole or not at all, on both sides (FileMirror).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "rendezvous/service.h"
#include "transfer/directory_follower.h"
#include "transfer/file_mirror.h"

namespace dlaunch {

class CheckpointRelay {
 public:
  // `server` must outlive the relay.
  // `max_bytes`: what the copies may take on this machine's disk.
  CheckpointRelay(std::string cache_dir, RendezvousService& server, std::uint64_t max_bytes);

  // A chunk from the node holding rank 0; an error names the file.
  Result<void> keep(const proto::FileChunk& chunk);

  struct Carried {
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
  };
  // Sends every complete file of the copy to `conn`, then calls `done` (at
  // once when the copy is empty). One carry at a time: a new one replaces an
  // unfinished one, whose `done` is never called.
  void carry(ConnId conn, std::function<void(Carried)> done);
  // The connection is gone: its carry ends without `done`.
  void drop(ConnId conn);
  bool carrying(ConnId conn) const { return carry_ && carry_->conn == conn; }

 private:
  struct Carry {
    ConnId conn = 0;
    DirectoryFollower files;
    std::function<void(Carried)> done;
    std::uint64_t files_sent = 0;
  };
  void pump();

  FileMirror cache_;
  RendezvousService& server_;
  std::optional<Carry> carry_;
};

}  // namespace dlaunch
