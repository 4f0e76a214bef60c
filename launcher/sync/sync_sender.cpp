#include "launcher/sync/sync_sender.h"

#include <algorithm>

namespace dlaunch {

SyncSender::SyncSender(const SyncManifest& manifest, bool delete_extra)
    : manifest_(manifest), delete_extra_(delete_extra) {}

std::optional<proto::SyncOffer> SyncSender::next_offer() {
  if (offer_done_) return std::nullopt;
  proto::SyncOffer offer;
  offer.first = static_cast<std::uint32_t>(next_entry_);
  if (next_entry_ == 0) {
    offer.delete_extra = delete_extra_;
    offer.ignore = manifest_.ignore;
    offer.source = manifest_.source;
  }
  std::size_t bytes = 0;
  const auto& entries = manifest_.entries;
  while (next_entry_ < entries.size() && offer.entries.size() < proto::kMaxSyncEntriesPerOffer) {
    const auto& e = entries[next_entry_];
    const std::size_t size = e.path.size() + e.target.size() + e.sha256.size() + 32;
    if (!offer.entries.empty() && bytes + size > kOfferBatchBytes) break;
    bytes += size;
    offer.entries.push_back(e);
    ++next_entry_;
  }
  offer.last = next_entry_ >= entries.size();
  offer_done_ = offer.last;
  return offer;
}

Result<void> SyncSender::on_want(const proto::SyncWant& want) {
  if (!offer_done_) return fail("asked for files before the whole offer was sent");
  if (wants_complete_) return fail("asked for files after its last answer");
  for (const auto index : want.indices) {
    if (index >= manifest_.entries.size() || manifest_.entries[index].kind != proto::SyncKind::file)
      return fail("asked for entry " + std::to_string(index) +
                  ", which is not a file of the offer");
    if (!wanted_.empty() && index <= wanted_.back())
      return fail("asked for entry " + std::to_string(index) + " out of order");
    wanted_.push_back(index);
    bytes_wanted_ += manifest_.entries[index].size;
  }
  wants_complete_ = want.last;
  return {};
}

std::optional<SyncSender::Piece> SyncSender::next_piece() {
  if (!wants_complete_ || next_want_ >= wanted_.size()) return std::nullopt;
  const std::uint32_t index = wanted_[next_want_];
  const std::uint64_t size = manifest_.entries[index].size;
  Piece piece;
  piece.index = index;
  piece.offset = offset_;
  piece.length =
      static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, proto::kMaxFileChunk));
  offset_ += piece.length;
  bytes_sent_ += piece.length;
  if (offset_ >= size) {
    ++next_want_;
    ++files_sent_;
    offset_ = 0;
  }
  return piece;
}

}  // namespace dlaunch
