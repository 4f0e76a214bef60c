#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <utility>

#include "protocol/frame.h"
#include "protocol/messages.h"

using namespace dlaunch;

TEST_CASE("append_log_line writes encode(LogLine)'s bytes after what the buffer holds") {
  std::string buffer = "queued";
  const std::string long_text(70'000, 'x');
  for (const auto& [rank, text] :
       {std::pair<int, std::string>{0, ""}, {3, "hello"}, {-1, long_text}}) {
    const proto::LogLine line{rank, proto::Stream::err, text, proto::LineEnd::continued};
    const std::string expected = buffer + proto::encode(line);
    proto::append_log_line(buffer, line.rank, line.stream, line.text, line.end);
    CHECK(buffer == expected);
    CHECK(proto::encode(line).size() == text.size() + proto::kLogLineOverhead);
  }
}

TEST_CASE("frames round-trip when fed byte by byte") {
  const std::string a = encode_frame(5, "hello");
  const std::string b = encode_frame(6, std::string(1000, 'x'));
  FrameDecoder d(kMaxFrame);
  // A frame's payload points into the decoder: kept here as a copy.
  std::vector<std::pair<std::uint8_t, std::string>> got;
  for (char c : a + b) {
    d.feed(std::string_view(&c, 1));
    for (;;) {
      auto r = d.next();
      REQUIRE(r.status != FrameDecoder::Status::bad);
      if (r.status == FrameDecoder::Status::need_more) break;
      got.emplace_back(r.frame.type, r.frame.payload);
    }
  }
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == 5);
  CHECK(got[0].second == "hello");
  CHECK(got[1].second == std::string(1000, 'x'));
  CHECK(d.buffered() == 0);
}

TEST_CASE("each() hands out the frames before a bad one, then why; false stops it") {
  FrameDecoder d(kMaxPreAuthFrame);
  d.feed(encode_frame(1, "a") + encode_frame(2, "b") + encode_frame(3, "c"));
  std::vector<std::string> got;
  auto keep = [&got](Frame&& f) {
    got.emplace_back(f.payload);
    return f.type != 2;  // stop after the second
  };
  CHECK(d.each(keep));
  CHECK(got == std::vector<std::string>{"a", "b"});
  CHECK(d.each(keep));
  CHECK(got == std::vector<std::string>{"a", "b", "c"});
  // Then a frame over the limit: the reason, and nothing more handed out.
  d.feed(encode_frame(4, std::string(kMaxPreAuthFrame + 1, 'x')).substr(0, 4));
  const auto bad = d.each(keep);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().find("exceeds limit") != std::string::npos);
  CHECK(got.size() == 3);
}

TEST_CASE("a frame over the limit is refused before its body arrives") {
  FrameDecoder d(kMaxPreAuthFrame);
  std::string header = encode_frame(1, std::string(kMaxPreAuthFrame, 'a')).substr(0, 4);
  d.feed(header);
  auto r = d.next();
  CHECK(r.status == FrameDecoder::Status::bad);
  CHECK(r.reason.find("exceeds limit") != std::string::npos);
}

TEST_CASE("probe messages with out-of-range fields are malformed") {
  auto decodes = [](const proto::Message& m) {
    const std::string bytes = proto::encode(m);
    return proto::decode(bytes[4], std::string_view(bytes).substr(5)).has_value();
  };
  CHECK(decodes(proto::Probe{29500, 3000, {"a"}}));
  CHECK_FALSE(decodes(proto::Probe{0, 3000, {"a"}}));     // no port
  CHECK_FALSE(decodes(proto::Probe{29500, 0, {"a"}}));    // no time to try
  CHECK_FALSE(decodes(proto::Probe{29500, 3000, {""}}));  // an empty address
  CHECK_FALSE(decodes(proto::Probe{29500, 3000, std::vector<std::string>(17, "a")}));
  proto::Join join{std::string(32, 'p'), 0, 1, 0, "h", 1, 1};
  join.interfaces.push_back(
      {"eth0", net::InterfaceKind::physical, 1500, true, {{"10.0.0.1", 33, false}}});
  CHECK_FALSE(decodes(join));  // an IPv4 prefix longer than 32 bits
  join.interfaces.back().addresses.back().prefix = 32;
  CHECK(decodes(join));
  join.interfaces.assign(65, join.interfaces.back());
  CHECK_FALSE(decodes(join));
}

TEST_CASE("check messages with out-of-range fields are malformed") {
  auto decodes = [](const proto::Message& m) {
    const std::string bytes = proto::encode(m);
    return proto::decode(bytes[4], std::string_view(bytes).substr(5)).has_value();
  };
  CHECK(decodes(proto::PeerTest{0, 1000, 3000, {{1, "a", 1}}}));
  CHECK_FALSE(decodes(proto::PeerTest{0, 1000, 3000, {{1, "", 1}}}));     // no address
  CHECK_FALSE(decodes(proto::PeerTest{0, 1000, 3000, {{1, "a", 0}}}));    // no port
  CHECK_FALSE(decodes(proto::PeerTest{0, 1000, 3000, {{-1, "a", 1}}}));   // no node
  CHECK_FALSE(decodes(proto::PeerTest{0, 60'001, 3000, {{1, "a", 1}}}));  // too long
  CHECK_FALSE(decodes(proto::PeerTest{0, 1000, 0, {{1, "a", 1}}}));       // no connect time
  CHECK_FALSE(decodes(proto::PeerTest{
      0, 1000, 3000, std::vector<proto::PeerTarget>(proto::kMaxPeerTargets + 1, {1, "a", 1})}));
  CHECK_FALSE(decodes(proto::PeerTestReport{0, {{1, true, -5, 0, 0, ""}}}));
  CHECK_FALSE(decodes(proto::PeerTestReport{0, {{1, true, 5, 0, -1, ""}}}));
  proto::NcclTest nccl{"", 2, 0, 2, "", {8}, 20, 5};
  CHECK(decodes(nccl));
  nccl.unique_id = "short";  // an id has exactly ncclUniqueId's size
  CHECK_FALSE(decodes(nccl));
  nccl.unique_id.clear();
  nccl.first_rank = 1;  // ranks 1..2 of 2
  CHECK_FALSE(decodes(nccl));
  nccl.first_rank = 0;
  nccl.sizes = {-1};
  CHECK_FALSE(decodes(nccl));
  nccl.sizes = {8};
  nccl.iterations = 0;
  CHECK_FALSE(decodes(nccl));
  CHECK_FALSE(decodes(proto::NcclReport{"", "", "", {{8, -1}}}));
  proto::HostFacts facts;
  CHECK(decodes(facts));
  facts.shm_size = -2;
  CHECK_FALSE(decodes(facts));
  facts.shm_size = 1;
  facts.gpus.resize(proto::kMaxGpus + 1);
  CHECK_FALSE(decodes(facts));
  facts.gpus.resize(1);
  facts.gpus[0].name = std::string(proto::kMaxFactText + 1, 'g');
  CHECK_FALSE(decodes(facts));
  // A fresh GPU entry (GCC 12 warns wrongly about assigning a short literal here).
  facts.gpus.assign(1, proto::GpuFact{"g", 1, 0, 101, ""});
  CHECK_FALSE(decodes(facts));
  facts.gpus.assign(1, proto::GpuFact{"g", 1, 0, -1, ""});
  CHECK(decodes(facts));
}

TEST_CASE("file chunks with an empty path or over the limits are malformed") {
  auto decodes = [](const proto::Message& m) {
    const std::string bytes = proto::encode(m);
    return proto::decode(bytes[4], std::string_view(bytes).substr(5)).has_value();
  };
  CHECK(decodes(proto::FileChunk{"events", 0, false, "x"}));
  CHECK_FALSE(decodes(proto::FileChunk{"", 0, false, "x"}));
  CHECK_FALSE(decodes(proto::FileChunk{std::string(proto::kMaxFilePath + 1, 'p'), 0, false, ""}));
  CHECK_FALSE(
      decodes(proto::FileChunk{"events", 0, false, std::string(proto::kMaxFileChunk + 1, 'x')}));
}

TEST_CASE("a zero-length frame is bad") {
  FrameDecoder d;
  d.feed(std::string("\0\0\0\0", 4));
  CHECK(d.next().status == FrameDecoder::Status::bad);
}

namespace {

// One or more messages of every type, with fields at their limits.
std::vector<proto::Message> sample_messages() {
  const std::string full_chunk(proto::kMaxFileChunk, '\x07');
  return {
      proto::Hello{proto::kMagic, proto::kVersion, std::string(32, 'n')},
      proto::Challenge{proto::kMagic, proto::kVersion, std::string(32, 's')},
      proto::Join{std::string(32, 'p'), 3, 8, 8, "gpu7", 29500, 4242},
      proto::Welcome{std::string(32, 'w')},
      proto::Assign{"job-1", 2, 5, 1, 4, 8, 8, 32, "10.0.0.1", 29501},
      proto::LogLine{7, proto::Stream::err, "a line\twith bytes \x01\xff"},
      proto::RankExit{7, 0, 9},
      proto::AgentDone{2, 40000},
      proto::Stop{3, true, 0, "rank 3 failed"},
      proto::Heartbeat{},
      proto::Reject{"nope"},
      proto::Join{std::string(32, 'p'), 0, 1, 0, "h0", 29500, 1, 2, 29500,
                  net::Interfaces{{"ens5",
                                   net::InterfaceKind::physical,
                                   9000,
                                   true,
                                   {{"198.18.1.10", 24, false}, {"2001:db8::10", 64, true}}},
                                  {"lo", net::InterfaceKind::loopback, 65536, true, {}}}},
      proto::Assign{"job-1", 0, 0, 0, 2, 0, 1, 2, "198.18.1.10", 29501, "ens5"},
      proto::Probe{29500, 3000, {"198.18.1.10", "gpu-a.example"}},
      proto::ProbeReport{{{true, 420, "ens5", ""}, {false, 0, "", "timed out"}}},
      proto::FactsRequest{},
      proto::HostFacts{"0.9.0",
                       "Debian GNU/Linux 12 (bookworm)",
                       "6.1.0-18-amd64",
                       64,
                       {{"NVIDIA H100 80GB HBM3", 85899345920ULL, 1ULL << 30, 97, "nightly"},
                        {"NVIDIA H100", 1}},
                       "550.54.15",
                       "12.4",
                       1LL << 40,
                       -1,
                       64LL << 20,
                       1732300000123456LL,
                       "3.11.2",
                       "",
                       "/usr/bin/python3",
                       "aarch64",
                       "glibc 2.39",
                       "aarch64"},
      proto::PeerTest{3, 1000, 3000, {{1, "198.18.2.11", 40000}, {7, "fe80::1", 1}}},
      proto::PeerTestReport{
          3, {{1, true, 850, 123456789ULL, 1002000, ""}, {7, false, 0, 0, 0, "timed out"}}},
      proto::FileChunk{"train/events.out.tfevents.1.host", 1ULL << 33, true, full_chunk},
      proto::FileChunk{"ckpt/model.pt", 7, false, "tail", proto::FileSet::checkpoint, true},
      proto::SyncOffer{true,
                       {".git", "*.pt", "data/"},
                       0,
                       {{"src", proto::SyncKind::dir, 0755},
                        {"src/run.sh", proto::SyncKind::file, 0755, 12, std::string(32, 'h')},
                        {"latest", proto::SyncKind::symlink, 0, 0, "", "src/run.sh"}},
                       false,
                       proto::SyncInto::workdir,
                       {std::string(32, 'm') + "/" + std::string(36, 'b'), "/home/u/proj",
                        (1ULL << 40) + 3, (1ULL << 33) + 9}},
      proto::SyncOffer{false, {}, 3, {}, true},
      proto::SyncOffer{false,
                       {},
                       0,
                       {{std::string(64, 'f') + ".tar", proto::SyncKind::file, 0644, 1ULL << 34,
                         std::string(32, 'i')}},
                       true,
                       proto::SyncInto::image_cache},
      proto::SyncWant{{1, 7, 4096}, true},
      proto::SyncData{7, 1ULL << 32, full_chunk},
      proto::SyncDone{3, 1ULL << 33, 2, ""},
      proto::SyncDone{0, 0, 0, "data/x: No space left on device"},
      proto::NcclTest{},
      proto::NcclTest{std::string(proto::kNcclUniqueIdBytes, '\x07'),
                      16,
                      8,
                      8,
                      "=ens5",
                      {8, 1 << 20, 1LL << 30},
                      20,
                      5},
      proto::NcclReport{std::string(proto::kNcclUniqueIdBytes, 'i'), "2.27.3", "", {}},
      proto::NcclReport{"", "2.27.3", "", {{8, 12000}, {1LL << 30, 2'500'000'000LL}}},
      proto::NcclReport{"", "", "cannot load libnccl.so.2", {}},
      proto::StacksRequest{7, {}},
      proto::StacksRequest{8, {0, 5, 4095}},
      proto::StacksReport{7, 3, "S", 12, 500, "futex_wait_queue", 61000, "faulthandler",
                          "Thread 0x1 (most recent call first):\n  File \"t.py\", line 3\n"},
      proto::StacksReport{7, -1},
  };
}

}  // namespace

TEST_CASE("every message type round-trips through encode and decode") {
  const auto messages = sample_messages();
  for (const auto& m : messages) {
    const std::string bytes = proto::encode(m);
    FrameDecoder d(kMaxFrame);
    d.feed(bytes);
    auto r = d.next();
    REQUIRE(r.status == FrameDecoder::Status::ok);
    auto back = proto::decode(r.frame.type, r.frame.payload);
    REQUIRE(back.has_value());
    CHECK(back->index() == m.index());
    CHECK(proto::encode(*back) == bytes);
  }
}

TEST_CASE("decoding rejects truncated, padded and out-of-range messages") {
  const std::string join = proto::encode(proto::Join{std::string(32, 'p'), 0, 1, 0, "h", 1, 1});
  const std::string payload = join.substr(5);
  const auto type = static_cast<std::uint8_t>(proto::Type::join);
  CHECK(proto::decode(type, payload).has_value());
  CHECK_FALSE(proto::decode(type, payload.substr(0, payload.size() - 1)).has_value());
  CHECK_FALSE(proto::decode(type, payload + "x").has_value());
  CHECK_FALSE(proto::decode(0, payload).has_value());
  CHECK_FALSE(proto::decode(200, payload).has_value());
  // nproc 0 is not a valid join
  const std::string bad = proto::encode(proto::Join{std::string(32, 'p'), 0, 0, 0, "h", 1, 1});
  CHECK_FALSE(proto::decode(type, bad.substr(5)).has_value());
  // an assignment whose ranks do not fit the world
  const std::string assign = proto::encode(proto::Assign{"j", 0, 0, 0, 1, 3, 2, 4, "a", 1});
  CHECK_FALSE(
      proto::decode(static_cast<std::uint8_t>(proto::Type::assign), assign.substr(5)).has_value());
}

// The decoder's contract on any input: a message of the type it was given
// whose encoding decodes to itself, or nothing; never a crash. Mutants of a
// valid message of every type reach past the first field check.
TEST_CASE("mangled payloads of every type decode to a canonical message or to nothing") {
  std::mt19937 rng(12345);
  std::map<int, std::pair<int, int>> accepted_rejected;  // by type
  const auto mutate = [&](std::string p) {
    switch (rng() % 4) {
      case 0:  // flip a few bits
        for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n && !p.empty(); ++k)
          p[rng() % p.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // cut short
        p.resize(p.empty() ? 0 : rng() % p.size());
        break;
      case 2:  // trailing bytes
        for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k)
          p.push_back(static_cast<char>(rng()));
        break;
      default:  // a run of random bytes
        if (!p.empty()) {
          const std::size_t at = rng() % p.size();
          for (std::size_t k = at; k < std::min(p.size(), at + 1 + rng() % 16); ++k)
            p[k] = static_cast<char>(rng());
        }
    }
    return p;
  };
  for (const auto& m : sample_messages()) {
    const std::string bytes = proto::encode(m);
    const auto type = static_cast<std::uint8_t>(bytes[4]);
    // Fewer of the samples that carry a whole file chunk: each copy is large.
    const int mutants = bytes.size() > 4096 ? 100 : 1000;
    for (int i = 0; i < mutants; ++i) {
      const std::string mutant = mutate(bytes.substr(5));
      const auto back = proto::decode(type, mutant);
      auto& [accepted, rejected] = accepted_rejected[type];
      if (!back) {
        ++rejected;
        continue;
      }
      ++accepted;
      const std::string again = proto::encode(*back);
      REQUIRE(static_cast<std::uint8_t>(again[4]) == type);
      const auto twice = proto::decode(type, std::string_view(again).substr(5));
      REQUIRE(twice.has_value());
      CHECK(proto::encode(*twice) == again);
    }
  }
  // Every type the protocol has was fed, and its checks both took and refused.
  for (int t = static_cast<int>(proto::Type::hello); t <= static_cast<int>(proto::kLastType); ++t) {
    CAPTURE(t);
    REQUIRE(accepted_rejected.count(t) == 1);
    CHECK(accepted_rejected[t].second > 0);
  }
  // Types outside the protocol are refused whatever their payload.
  for (int t : {0, static_cast<int>(proto::kLastType) + 1, 200, 255}) {
    for (int i = 0; i < 200; ++i) {
      std::string junk(rng() % 64, '\0');
      for (auto& c : junk) c = static_cast<char>(rng());
      CHECK_FALSE(proto::decode(static_cast<std::uint8_t>(t), junk).has_value());
    }
  }
}

// FrameDecoder on any byte stream, fed in any pieces: each frame it returns is
// exactly the bytes the stream holds there and within the limit; it asks for
// more only when the next frame is incomplete; "bad" only for a length of 0
// or over the limit.
TEST_CASE("the frame decoder cuts any byte stream exactly where its headers say") {
  std::mt19937 rng(54321);
  for (int round = 0; round < 3000; ++round) {
    std::string stream;
    for (int k = 0, n = static_cast<int>(rng() % 6); k < n; ++k) {
      if (rng() % 2) {
        stream += encode_frame(static_cast<std::uint8_t>(rng()), std::string(rng() % 40, 'x'));
      } else {
        for (int b = 0, len = static_cast<int>(rng() % 12); b < len; ++b)
          stream.push_back(static_cast<char>(rng() % 3 ? rng() % 4 : rng()));
      }
    }
    const std::size_t limit = 1 + rng() % 64;
    FrameDecoder d(limit);
    std::size_t fed = 0, pos = 0;
    bool stopped = false;
    while (!stopped) {
      const std::size_t piece = std::min<std::size_t>(stream.size() - fed, rng() % 9);
      d.feed(std::string_view(stream).substr(fed, piece));
      fed += piece;
      for (;;) {
        REQUIRE(d.buffered() == fed - pos);
        const auto r = d.next();
        const std::size_t have = fed - pos;
        const std::uint32_t length =
            have < 4
                ? 0
                : (static_cast<std::uint32_t>(static_cast<unsigned char>(stream[pos])) << 24 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(stream[pos + 1])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(stream[pos + 2])) << 8 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(stream[pos + 3])));
        if (r.status == FrameDecoder::Status::bad) {
          REQUIRE(have >= 4);
          CHECK((length == 0 || length > limit));
          stopped = true;
          break;
        }
        if (r.status == FrameDecoder::Status::need_more) {
          CHECK((have < 4 || (length >= 1 && length <= limit && have < 4 + length)));
          break;
        }
        REQUIRE(have >= 4 + static_cast<std::size_t>(length));
        CHECK(length >= 1);
        CHECK(length <= limit);
        CHECK(r.frame.type == static_cast<std::uint8_t>(stream[pos + 4]));
        CHECK(r.frame.payload == stream.substr(pos + 5, length - 1));
        pos += 4 + length;
      }
      if (fed == stream.size()) break;
    }
  }
}

// Found by frame_fuzz: rank_offset + local_world_size overflowed int32.
TEST_CASE("regression: an assignment with huge rank numbers is rejected without overflow") {
  const std::string a =
      proto::encode(proto::Assign{"j", 0, 0, 0, 1, 0x7fffffff, 0x7fffffff, 0x7fffffff, "a", 1});
  CHECK_FALSE(
      proto::decode(static_cast<std::uint8_t>(proto::Type::assign), a.substr(5)).has_value());
}

// Found by frame_fuzz: a flag byte of 3 decoded as true and re-encoded as 1.
TEST_CASE("regression: boolean fields accept only 0 and 1") {
  std::string stop = proto::encode(proto::Stop{3, true, -1, "x"});
  stop[5 + 4] = 3;
  CHECK_FALSE(
      proto::decode(static_cast<std::uint8_t>(proto::Type::stop), stop.substr(5)).has_value());
}

TEST_CASE("sync messages: paths, kinds, digests and counts are checked by the decoder") {
  auto decodes = [](const proto::Message& m) {
    const std::string bytes = proto::encode(m);
    return proto::decode(bytes[4], std::string_view(bytes).substr(5)).has_value();
  };
  auto offer_of = [](proto::SyncEntry e) {
    return proto::SyncOffer{false, {}, 0, {std::move(e)}, true};
  };
  const std::string digest(32, 'd');
  CHECK(decodes(offer_of({"a/b.txt", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"../b", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"a/../b", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"/etc/passwd", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"a//b", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"./a", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"a/", proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({std::string("a\0b", 3), proto::SyncKind::file, 0644, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"a", proto::SyncKind::file, 0644, 5, "short"})));
  CHECK_FALSE(decodes(offer_of({"a", proto::SyncKind::file, 010000, 5, digest})));
  CHECK_FALSE(decodes(offer_of({"a", proto::SyncKind::dir, 0755, 5})));
  CHECK_FALSE(decodes(offer_of({"a", proto::SyncKind::symlink, 0, 0, "", ""})));
  CHECK(decodes(offer_of({"a", proto::SyncKind::symlink, 0, 0, "", "/abs/target"})));
  CHECK_FALSE(
      decodes(offer_of({std::string(proto::kMaxFilePath + 1, 'p'), proto::SyncKind::dir, 0755})));
  // Too many entries in one batch, or past the whole offer's limit.
  proto::SyncOffer many{false, {}, 0, {}, true};
  many.entries.assign(proto::kMaxSyncEntriesPerOffer + 1, {"d", proto::SyncKind::dir, 0755});
  CHECK_FALSE(decodes(many));
  CHECK_FALSE(decodes(proto::SyncOffer{
      false, {}, proto::kMaxSyncEntries, {{"d", proto::SyncKind::dir, 0755}}, true}));
  // Wanted indices go up; data past the chunk limit is refused.
  CHECK_FALSE(decodes(proto::SyncWant{{3, 3}, false}));
  CHECK_FALSE(decodes(proto::SyncWant{{4, 2}, false}));
  proto::SyncWant want{{}, true};
  for (std::uint32_t i = 0; i <= proto::kMaxSyncWant; ++i) want.indices.push_back(i);
  CHECK_FALSE(decodes(want));
  CHECK(decodes(proto::SyncData{0, 0, std::string(proto::kMaxFileChunk, 'x')}));
  CHECK_FALSE(decodes(proto::SyncData{0, 0, std::string(proto::kMaxFileChunk + 1, 'x')}));
  CHECK_FALSE(decodes(proto::SyncData{static_cast<std::uint32_t>(proto::kMaxSyncEntries), 0, ""}));
}

TEST_CASE("the fuzz corpus's sync seed holds valid frames of every sync message") {
  std::ifstream in(std::string(DLAUNCH_SOURCE_DIR) + "/tests/fuzz/corpus/frame/sync",
                   std::ios::binary);
  REQUIRE(in);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  FrameDecoder d(kMaxFrame);
  d.feed(bytes.str().substr(1));  // the first byte steers the fuzz target
  std::vector<std::string_view> names;
  for (;;) {
    auto r = d.next();
    if (r.status != FrameDecoder::Status::ok) break;
    const auto m = proto::decode(r.frame.type, r.frame.payload);
    REQUIRE(m.has_value());
    names.push_back(proto::type_name(*m));
  }
  CHECK(names == std::vector<std::string_view>{"sync_offer", "sync_want", "sync_data", "sync_data",
                                               "sync_done", "sync_done"});
}
