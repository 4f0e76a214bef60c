#include "agent/line_splitter.h"

#include <doctest/doctest.h>

#include <random>

using namespace dlaunch;
using proto::LineEnd;

namespace {

struct Piece {
  std::string text;
  LineEnd end;
  bool operator==(const Piece&) const = default;
};

std::vector<Piece> split(const std::vector<std::string>& chunks, std::size_t max,
                         bool finish = true) {
  LineSplitter s(max);
  std::vector<Piece> pieces;
  auto sink = [&](std::string_view t, LineEnd e) { pieces.push_back({std::string(t), e}); };
  for (const auto& c : chunks) s.feed(c, sink);
  if (finish) s.finish(sink);
  return pieces;
}

// The bytes the coordinator writes to the rank's log for these pieces.
std::string rejoin(const std::vector<Piece>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    out += p.text;
    if (p.end == LineEnd::newline) out += '\n';
    if (p.end == LineEnd::carriage_return) out += '\r';
  }
  return out;
}

std::vector<std::string> texts(const std::vector<Piece>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

}  // namespace

TEST_CASE("lines split across reads are joined; empty lines kept") {
  CHECK(texts(split({"ab", "c\nd", "e\n\nf\n"}, 100)) ==
        std::vector<std::string>{"abc", "de", "", "f"});
}

TEST_CASE("a partial last line is flushed at the end, without a newline of its own") {
  CHECK(split({"one\ntwo"}, 100) ==
        std::vector<Piece>{{"one", LineEnd::newline}, {"two", LineEnd::partial}});
  CHECK(split({"one\ntwo"}, 100, false) == std::vector<Piece>{{"one", LineEnd::newline}});
}

TEST_CASE("an overlong line is split into pieces and nothing is lost") {
  const std::string big(10, 'x');
  CHECK(split({big + "\n"}, 4) == std::vector<Piece>{{"xxxx", LineEnd::continued},
                                                     {"xxxx", LineEnd::continued},
                                                     {"xx", LineEnd::newline}});
  CHECK(split({"xxxx\n"}, 4) == std::vector<Piece>{{"xxxx", LineEnd::newline}});
  CHECK(split({"xx", "xx", "\n"}, 4) == std::vector<Piece>{{"xxxx", LineEnd::newline}});
  const std::string huge(3'000'000, 'y');
  const auto pieces = split({huge + "\n"}, 64 * 1024);
  for (const auto& p : pieces) CHECK(p.text.size() <= 64 * 1024);
  CHECK(rejoin(pieces) == huge + "\n");
}

TEST_CASE("carriage returns end progress segments; \\r\\n ends a line") {
  CHECK(split({"10%\r20%\r", "30%\rdone\n"}, 100) ==
        std::vector<Piece>{{"10%", LineEnd::carriage_return},
                           {"20%", LineEnd::carriage_return},
                           {"30%", LineEnd::carriage_return},
                           {"done", LineEnd::newline}});
  // "\r\n" split across reads is still one line end.
  CHECK(split({"dos\r", "\nnext\r\n"}, 100) ==
        std::vector<Piece>{{"dos\r", LineEnd::newline}, {"next\r", LineEnd::newline}});
}

TEST_CASE("flush_partial shows what waits; a lone \\r becomes a progress segment") {
  LineSplitter s(100);
  std::vector<Piece> pieces;
  auto sink = [&](std::string_view t, LineEnd e) { pieces.push_back({std::string(t), e}); };
  s.feed("progress 50%", sink);
  CHECK(pieces.empty());
  CHECK(s.has_pending());
  s.flush_partial(sink);
  s.feed("\r", sink);
  s.flush_partial(sink);
  CHECK(pieces ==
        std::vector<Piece>{{"progress 50%", LineEnd::partial}, {"", LineEnd::carriage_return}});
  CHECK_FALSE(s.has_pending());
}

namespace {

// `size` random bytes of `alphabet`, and the same cut into reads of 1 to
// `longest_read` bytes.
std::pair<std::string, std::vector<std::string>> random_reads(std::mt19937& rng,
                                                              const std::string& alphabet, int size,
                                                              std::size_t longest_read) {
  std::string bytes;
  for (int i = 0; i < size; ++i) bytes += alphabet[rng() % alphabet.size()];
  std::vector<std::string> reads;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t n = 1 + rng() % longest_read;
    reads.push_back(bytes.substr(at, n));
    at += n;
  }
  return {bytes, reads};
}

}  // namespace

TEST_CASE("whatever the reads, the log gets back the exact bytes") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const auto [bytes, chunks] = random_reads(rng, "ab\r\n", 300, 20);
    CHECK(rejoin(split(chunks, 5)) == bytes);
  }
}

TEST_CASE("whatever the reads, the pieces are the same: whole lines in one read or byte by byte") {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    const auto [bytes, chunks] = random_reads(rng, "abc\r\n", 400, 40);
    std::vector<std::string> single;
    for (char c : bytes) single.emplace_back(1, c);
    for (std::size_t max : {3, 8, 1000}) {
      const auto by_byte = split(single, max);
      CHECK(split({bytes}, max) == by_byte);
      CHECK(split(chunks, max) == by_byte);
    }
  }
}
