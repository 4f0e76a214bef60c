// `--sync`: the agent's side of the transfer into the ranks' working
// directory. It takes the coordinator's offer, compares it with what the
// directory holds (hashing only files whose size matches, a bounded amount per
// step so that the agent keeps answering heartbeats), says which files it
// needs, writes each into a temporary file beside its place, checks its
// SHA-256 and renames it into place with its mode. Symbolic links are created
// as links, never followed: every parent directory is opened with O_NOFOLLOW
// below the destination, so a path whose parent is a link (pointing anywhere)
// or has a ".." component is refused. With --sync-delete it then removes what
// the offer lacks and the ignore rules do not protect.
//
// Directories are created writable by their owner and get their exact mode
// once everything is written, deepest first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/messages.h"
#include "protocol/sha256.h"
#include "transfer/sync_ignore.h"

namespace dlaunch {

class SyncReceiver {
 public:
  // `dest`: an existing directory. Check error() after construction.
  // `trust_sizes`: an existing file of the offered size counts as the same
  // without being hashed (the image cache, whose files are named by their
  // SHA-256 and were checked before they got that name).
  explicit SyncReceiver(const std::string& dest, bool trust_sizes = false);
  ~SyncReceiver();
  SyncReceiver(const SyncReceiver&) = delete;
  SyncReceiver& operator=(const SyncReceiver&) = delete;

  // Every call below returns false once the sync has failed; error() says
  // why, naming the path. The caller reports it in SyncDone and stops.
  bool on_offer(proto::SyncOffer&& offer);
  bool offer_complete() const { return offer_complete_; }
  // Compares the destination with the offer, hashing at most `budget` bytes
  // of existing files; `done` becomes true when the comparison is over (then
  // take_wants() has the answer).
  bool compare_step(std::size_t budget, bool* done);
  // The answer, in SyncWant batches (the last one says so).
  std::vector<proto::SyncWant> take_wants();
  bool on_data(const proto::SyncData& data);
  // Every wanted file is in place.
  bool data_complete() const { return compared_ && next_want_ >= wanted_.size(); }
  // Deletions (--sync-delete) and directory modes: the report to send.
  proto::SyncDone finish();

  const std::string& dest() const { return dest_; }
  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

 private:
  bool fail(const std::string& path, const std::string& why);
  // Opens the directory that holds `path` (O_NOFOLLOW at every step) and
  // sets `leaf` to its last component; -1 on failure (error set).
  int open_parent(const std::string& path, std::string* leaf);
  bool place_dir(const proto::SyncEntry& e);
  bool place_symlink(std::uint32_t index, const proto::SyncEntry& e);
  // Removes what is at `leaf` (a directory only when empty, or with
  // --sync-delete); true when nothing is there any more.
  bool clear_way(int parent, const std::string& leaf, const std::string& path);
  // The same, only when a directory is there (a rename replaces the rest).
  bool clear_dir_in_way(int parent, const std::string& leaf, const std::string& path);
  bool close_temp();
  void delete_extra();
  void delete_under(int dirfd, const std::string& rel);
  bool remove_tree(int parent, const std::string& name);
  void set_dir_modes();

  int dest_fd_ = -1;
  std::string dest_;
  bool trust_sizes_ = false;
  std::string error_;
  std::vector<proto::SyncEntry> entries_;
  bool delete_extra_ = false;
  IgnoreRules rules_;
  bool offer_complete_ = false;

  // Comparison.
  std::size_t compare_next_ = 0;
  int hash_fd_ = -1;  // the existing file being hashed
  Sha256 hash_;
  bool compared_ = false;
  std::vector<std::uint32_t> wanted_;
  bool wants_taken_ = false;

  // Writing.
  std::size_t next_want_ = 0;
  int temp_parent_ = -1;
  int temp_fd_ = -1;
  std::string temp_name_;
  std::string temp_leaf_;
  std::uint64_t written_ = 0;
  Sha256 write_hash_;

  std::unordered_map<std::string, std::size_t> offered_;  // path -> entry, for deletions
  proto::SyncDone done_;
};

}  // namespace dlaunch
