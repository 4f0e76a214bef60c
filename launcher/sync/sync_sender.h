// `--sync`: one node's side of the transfer, with no I/O. It cuts the
// manifest into SyncOffer batches (each well under the frame limit), takes
// the agent's SyncWant answers, and then says which piece of which file to
// send next; the coordinator reads the bytes and sends them while the node's
// connection has room, so memory stays bounded by that connection's output
// limit whatever the files' sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "launcher/sync/sync_manifest.h"
#include "protocol/messages.h"

namespace dlaunch {

class SyncSender {
 public:
  // Bytes of entries per offer batch (an estimate: paths, targets, digests and
  // fixed fields), far below the 1 MiB frame limit.
  static constexpr std::size_t kOfferBatchBytes = 512 * 1024;

  // `manifest` must outlive the sender (one manifest serves every node).
  SyncSender(const SyncManifest& manifest, bool delete_extra);

  // The next batch of the offer; nullopt once all went out.
  std::optional<proto::SyncOffer> next_offer();
  // The agent's answer. An error names what is wrong with it (an index that
  // is not a file of the offer, a SyncWant after the last one).
  Result<void> on_want(const proto::SyncWant& want);
  bool wants_complete() const { return wants_complete_; }

  struct Piece {
    std::uint32_t index = 0;  // into the manifest's entries
    std::uint64_t offset = 0;
    std::size_t length = 0;  // 0 for an empty file's one piece
  };
  // The next piece of a wanted file, once every SyncWant is in; nullopt when
  // there is nothing (more) to send.
  std::optional<Piece> next_piece();
  // Every wanted byte has been handed out.
  bool all_sent() const { return wants_complete_ && next_want_ >= wanted_.size(); }

  std::uint64_t files_wanted() const { return wanted_.size(); }
  std::uint64_t bytes_wanted() const { return bytes_wanted_; }
  std::uint64_t files_sent() const { return files_sent_; }
  std::uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  const SyncManifest& manifest_;
  bool delete_extra_;
  std::size_t next_entry_ = 0;  // first entry not yet offered
  bool offer_done_ = false;
  std::vector<std::uint32_t> wanted_;
  bool wants_complete_ = false;
  std::size_t next_want_ = 0;  // the file being sent
  std::uint64_t offset_ = 0;   // in it
  std::uint64_t bytes_wanted_ = 0;
  std::uint64_t files_sent_ = 0;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace dlaunch
