#include "launcher/sync/sync_streams.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
namespace fs = std::filesystem;
using dlaunch::testing::ScratchDir;
using dlaunch::testing::write_file;

namespace {

// The agents' connections as SyncStreams sees them: what was sent to each,
// and a connection that is full after `room` messages until drain() calls
// back, as a real one does once its queue has gone out.
class FakeService : public RendezvousService {
 public:
  std::uint16_t port() const override { return 1; }
  void send(ConnId id, const proto::Message& message) override {
    sent[id].push_back(message);
    --room[id];
  }
  void close(ConnId, const std::string&) override {}
  bool output_full(ConnId id) const override {
    auto it = room.find(id);
    return it == room.end() || it->second <= 0;
  }
  void on_output_space(ConnId id, std::function<void()> callback) override {
    space[id] = std::move(callback);
  }
  void set_reading_paused(bool) override {}
  void stop() override {}

  void drain(ConnId id, int messages) {
    room[id] = messages;
    if (space[id]) space[id]();
  }
  template <class M>
  std::vector<M> of(ConnId id) const {
    std::vector<M> out;
    if (!sent.count(id)) return out;
    for (const auto& m : sent.at(id))
      if (const auto* x = std::get_if<M>(&m)) out.push_back(*x);
    return out;
  }

  std::map<ConnId, std::vector<proto::Message>> sent;
  std::map<ConnId, int> room;
  std::map<ConnId, std::function<void()>> space;
};

struct Streams {
  // `image`: an --image-file transfer before the directory's.
  explicit Streams(const std::string& dir, std::shared_ptr<const SyncManifest> image_manifest = {})
      : image(std::move(image_manifest)) {
    auto built = build_sync_manifest(dir);
    REQUIRE(built.ok());
    manifest = std::make_shared<const SyncManifest>(std::move(*built));
    SyncStreams::Settings settings;
    if (image)
      settings.transfers.push_back({image, proto::SyncInto::image_cache, false, "--image-file"});
    settings.transfers.push_back({manifest});
    settings.nnodes = 2;
    streams.emplace(
        settings, service, [](int node) { return "host" + std::to_string(node); },
        [this](ConnId conn, const proto::SyncDone& done, const std::string& what) {
          ended[conn] = done;
          ended_what[conn] = what;
        });
  }

  // Every file of the offer, as the agent of an empty directory answers.
  proto::SyncWant want_all() const {
    proto::SyncWant want;
    for (std::uint32_t i = 0; i < manifest->entries.size(); ++i)
      if (manifest->entries[i].kind == proto::SyncKind::file) want.indices.push_back(i);
    want.last = true;
    return want;
  }
  // The bytes the node got, by path, from its SyncData in order.
  std::map<std::string, std::string> received(ConnId conn) const {
    std::map<std::string, std::string> out;
    for (const auto& d : service.of<proto::SyncData>(conn)) {
      auto& bytes = out[manifest->entries[d.index].path];
      CHECK(d.offset == bytes.size());
      bytes += d.data;
    }
    return out;
  }

  std::shared_ptr<const SyncManifest> image;
  std::shared_ptr<const SyncManifest> manifest;
  FakeService service;
  std::optional<SyncStreams> streams;
  std::map<ConnId, proto::SyncDone> ended;
  std::map<ConnId, std::string> ended_what;
};

std::shared_ptr<const SyncManifest> image_manifest(const std::string& path, std::uint64_t size) {
  SyncManifest m;
  m.source_file = path;
  m.entries.push_back(
      {std::string(64, 'a') + ".tar", proto::SyncKind::file, 0644, size, std::string(32, 'd')});
  return std::make_shared<const SyncManifest>(std::move(m));
}

}  // namespace

TEST_CASE("sync streams: the offer, then every wanted byte, only while the connection has room") {
  ScratchDir dir;
  const std::string big(3 * proto::kMaxFileChunk + 17, 'x');
  write_file(dir.dir() / "a.py", "print(1)\n");
  write_file(dir.dir() / "data" / "big.bin", big);
  write_file(dir.dir() / "empty", "");
  Streams s(dir.path());
  s.service.room[7] = 1;
  s.streams->start(0, 7);
  REQUIRE(s.service.of<proto::SyncOffer>(7).size() == 1);  // then the connection was full
  s.streams->on_want(0, 7, s.want_all());
  CHECK(s.service.of<proto::SyncData>(7).empty());  // still full: nothing read or queued
  // Each time the connection drains, two more pieces go out, and no more.
  std::size_t pieces = 0;
  for (int drains = 0; drains < 10; ++drains) {
    s.service.drain(7, 2);
    const auto now = s.service.of<proto::SyncData>(7).size();
    CHECK(now - pieces <= 2);
    pieces = now;
  }
  const auto got = s.received(7);
  CHECK(got.at("a.py") == "print(1)\n");
  CHECK(got.at("data/big.bin") == big);
  CHECK(got.count("empty") == 1);
  CHECK(got.at("empty").empty());
  // The agent's SyncDone ends its sync and goes to the policy, once.
  s.streams->on_done(0, 7, proto::SyncDone{3, big.size() + 9, 0, ""});
  REQUIRE(s.ended.count(7) == 1);
  CHECK(s.ended.at(7).error.empty());
  s.streams->on_done(0, 7, proto::SyncDone{0, 0, 0, "again"});
  CHECK(s.ended.at(7).error.empty());
}

TEST_CASE("sync streams: a file gone since the manifest ends that node's sync, naming it") {
  ScratchDir dir;
  write_file(dir.dir() / "keep.txt", "k");
  write_file(dir.dir() / "gone.txt", "g");
  Streams s(dir.path());
  fs::remove(dir.dir() / "gone.txt");
  s.service.room[7] = 100;
  s.service.room[8] = 100;
  s.streams->start(0, 7);
  s.streams->start(1, 8);
  s.streams->on_want(0, 7, s.want_all());
  REQUIRE(s.ended.count(7) == 1);
  CHECK(s.ended.at(7).error.find("gone.txt") != std::string::npos);
  CHECK(s.ended.at(7).error.find("No such file") != std::string::npos);
  CHECK(s.ended.count(8) == 0);  // the other node is not affected
}

TEST_CASE("sync streams: an agent's answer out of turn ends its sync; strangers are ignored") {
  ScratchDir dir;
  write_file(dir.dir() / "a", "a");
  Streams s(dir.path());
  s.service.room[7] = 100;
  s.streams->start(0, 7);
  // Another connection claiming node 0, and a node that is not syncing.
  s.streams->on_want(0, 9, s.want_all());
  s.streams->on_done(1, 8, proto::SyncDone{});
  CHECK(s.ended.empty());
  proto::SyncWant bad;
  bad.indices = {999};
  bad.last = true;
  s.streams->on_want(0, 7, bad);
  REQUIRE(s.ended.count(7) == 1);
  CHECK(s.ended.at(7).error.rfind("its agent ", 0) == 0);
}

namespace {

// A node with an --image-file transfer (a 5-byte file) and a directory of one
// file, started on connection 7.
struct ImageThenDirectory {
  ImageThenDirectory()
      : dir(), elsewhere(), streams(with_files(dir, elsewhere), image_manifest(image_path(), 5)) {
    streams.service.room[7] = 100;
    streams.streams->start(0, 7);
  }
  static std::string with_files(const ScratchDir& d, const ScratchDir& e) {
    write_file(d.dir() / "a.py", "print(1)\n");
    write_file(e.dir() / "image.tar", "IMAGE");
    return d.path();
  }
  std::string image_path() const { return (elsewhere.dir() / "image.tar").string(); }

  ScratchDir dir;
  ScratchDir elsewhere;
  Streams streams;
};

}  // namespace

TEST_CASE("sync streams: the image file first, into the image cache, then the directory") {
  ImageThenDirectory fixture;
  auto& s = fixture.streams;
  auto offers = s.service.of<proto::SyncOffer>(7);
  REQUIRE(offers.size() == 1);
  CHECK(offers[0].into == proto::SyncInto::image_cache);
  REQUIRE(offers[0].entries.size() == 1);
  CHECK(offers[0].entries[0].path == std::string(64, 'a') + ".tar");
  // The file is read from where it lies, whatever its name in the cache.
  s.streams->on_want(0, 7, proto::SyncWant{{0}, true});
  const auto data = s.service.of<proto::SyncData>(7);
  REQUIRE(data.size() == 1);
  CHECK(data[0].data == "IMAGE");
  // The directory's offer waits for the image's SyncDone (its load).
  CHECK(s.service.of<proto::SyncOffer>(7).size() == 1);
  s.streams->on_done(0, 7, proto::SyncDone{1, 5, 0, ""});
  CHECK(s.ended.count(7) == 0);
  offers = s.service.of<proto::SyncOffer>(7);
  REQUIRE(offers.size() == 2);
  CHECK(offers[1].into == proto::SyncInto::workdir);
  s.streams->on_want(0, 7, s.want_all());
  s.streams->on_done(0, 7, proto::SyncDone{1, 9, 0, ""});
  // One end for the node, with both transfers summed.
  REQUIRE(s.ended.count(7) == 1);
  CHECK(s.ended.at(7).error.empty());
  CHECK(s.ended.at(7).files_written == 2);
  CHECK(s.ended.at(7).bytes_received == 14);
}

TEST_CASE("sync streams: a failed image load ends the node's sync, named, before the directory") {
  ImageThenDirectory fixture;
  auto& s = fixture.streams;
  s.streams->on_want(0, 7, proto::SyncWant{{}, true});  // cached: nothing wanted
  CHECK(s.service.of<proto::SyncData>(7).empty());
  s.streams->on_done(0, 7, proto::SyncDone{0, 0, 0, "podman cannot load it: no space"});
  REQUIRE(s.ended.count(7) == 1);
  CHECK(s.ended.at(7).error == "podman cannot load it: no space");
  CHECK(s.ended_what.at(7) == "--image-file");
  CHECK(s.service.of<proto::SyncOffer>(7).size() == 1);
}
