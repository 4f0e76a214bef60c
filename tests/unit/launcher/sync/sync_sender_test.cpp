#include "launcher/sync/sync_sender.h"

#include <doctest/doctest.h>

#include <tuple>

#include "protocol/frame.h"

using namespace dlaunch;

namespace {

SyncManifest manifest_of(std::vector<proto::SyncEntry> entries) {
  SyncManifest m;
  m.root = "/src";
  m.ignore = {".git", "*.pt"};
  m.entries = std::move(entries);
  return m;
}

proto::SyncEntry file(std::string path, std::uint64_t size) {
  return {std::move(path), proto::SyncKind::file, 0644, size, std::string(32, 'h')};
}

}  // namespace

TEST_CASE("the offer goes out in batches under the frame limit; rules and --sync-delete first") {
  std::vector<proto::SyncEntry> entries;
  for (int i = 0; i < 10'000; ++i)
    entries.push_back(file("dir/" + std::string(200, 'p') + std::to_string(i), 1));
  const auto m = manifest_of(entries);
  SyncSender sender(m, true);
  std::size_t total = 0;
  int batches = 0;
  bool last = false;
  while (auto offer = sender.next_offer()) {
    CHECK_FALSE(last);
    CHECK(offer->first == total);
    CHECK(offer->delete_extra == (batches == 0));
    CHECK(offer->ignore.empty() == (batches > 0));
    CHECK(offer->entries.size() <= proto::kMaxSyncEntriesPerOffer);
    CHECK(proto::encode(*offer).size() < kMaxFrame);
    total += offer->entries.size();
    last = offer->last;
    ++batches;
  }
  CHECK(last);
  CHECK(total == 10'000);
  CHECK(batches > 3);
}

TEST_CASE("pieces follow the wanted files in order, at most a chunk each; empty files get one") {
  const auto m = manifest_of({{"d", proto::SyncKind::dir, 0755},
                              file("d/big", proto::kMaxFileChunk * 2 + 10),
                              file("d/empty", 0),
                              file("d/same", 5),
                              {"l", proto::SyncKind::symlink, 0, 0, "", "d/big"}});
  SyncSender sender(m, false);
  CHECK_FALSE(sender.next_piece());           // nothing before the answer
  CHECK_FALSE(sender.on_want({{1}, false}));  // before the whole offer went out
  REQUIRE(sender.next_offer());
  CHECK_FALSE(sender.next_offer());
  CHECK(sender.on_want({{1}, false}));
  CHECK_FALSE(sender.next_piece());  // more answers may come
  CHECK(sender.on_want({{2}, true}));
  CHECK(sender.files_wanted() == 2);
  CHECK(sender.bytes_wanted() == proto::kMaxFileChunk * 2 + 10);
  std::vector<std::tuple<std::uint32_t, std::uint64_t, std::size_t>> pieces;
  while (auto p = sender.next_piece()) pieces.emplace_back(p->index, p->offset, p->length);
  CHECK(pieces == std::vector<std::tuple<std::uint32_t, std::uint64_t, std::size_t>>{
                      {1, 0, proto::kMaxFileChunk},
                      {1, proto::kMaxFileChunk, proto::kMaxFileChunk},
                      {1, proto::kMaxFileChunk * 2, 10},
                      {2, 0, 0}});
  CHECK(sender.all_sent());
  CHECK(sender.files_sent() == 2);
  CHECK(sender.bytes_sent() == sender.bytes_wanted());
  CHECK_FALSE(sender.on_want({{3}, true}));  // after the last answer
}

TEST_CASE("an answer naming a directory, a symlink, an unknown entry or going back is refused") {
  const auto m = manifest_of({{"d", proto::SyncKind::dir, 0755},
                              file("d/a", 1),
                              file("d/b", 1),
                              {"l", proto::SyncKind::symlink, 0, 0, "", "d/a"}});
  auto answer = [&m](proto::SyncWant want) {
    SyncSender sender(m, false);
    while (sender.next_offer()) {
    }
    return sender.on_want(want);
  };
  CHECK(answer({{1, 2}, true}));
  CHECK(answer({{0}, true}).error().find("not a file") != std::string::npos);
  CHECK(answer({{3}, true}).error().find("not a file") != std::string::npos);
  CHECK(answer({{9}, true}).error().find("not a file") != std::string::npos);
  SyncSender sender(m, false);
  while (sender.next_offer()) {
  }
  CHECK(sender.on_want({{2}, false}));
  CHECK(sender.on_want({{1}, true}).error().find("out of order") != std::string::npos);
}
