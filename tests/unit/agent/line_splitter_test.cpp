#include <doctest/doctest.h>

#include "agent/line_splitter.h"

using namespace dlaunch;

namespace {
std::vector<std::string> split(const std::vector<std::string>& chunks, std::size_t max,
                               bool finish = true) {
  LineSplitter s(max);
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  for (const auto& c : chunks) s.feed(c, sink);
  if (finish) s.finish(sink);
  return lines;
}
}  // namespace

TEST_CASE("lines split across reads are joined; empty lines kept") {
  CHECK(split({"ab", "c\nd", "e\n\nf\n"}, 100) == std::vector<std::string>{"abc", "de", "", "f"});
}

TEST_CASE("a partial last line is flushed at the end") {
  CHECK(split({"one\ntwo"}, 100) == std::vector<std::string>{"one", "two"});
  CHECK(split({"one\ntwo"}, 100, false) == std::vector<std::string>{"one"});
}

TEST_CASE("an overlong line is split into pieces and nothing is lost") {
  const std::string big(10, 'x');
  CHECK(split({big + "\n"}, 4) == std::vector<std::string>{"xxxx", "xxxx", "xx"});
  CHECK(split({"xxxx\n"}, 4) == std::vector<std::string>{"xxxx"});
  CHECK(split({"xx", "xx", "\n"}, 4) == std::vector<std::string>{"xxxx"});
  std::string joined;
  for (const auto& l : split({std::string(200'000, 'y')}, 64 * 1024)) {
    CHECK(l.size() <= 64 * 1024);
    joined += l;
  }
  CHECK(joined == std::string(200'000, 'y'));
}
