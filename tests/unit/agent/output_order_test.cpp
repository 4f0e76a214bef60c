#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "agent/output_order.h"

using namespace dlaunch;
using proto::LineEnd;
using proto::Stream;

namespace {

struct Recorder {
  std::vector<std::string> pieces;
  OutputOrder::Sink sink() {
    return [this](Stream stream, std::string_view text, LineEnd end) {
      std::string piece = stream == Stream::out ? "out:" : "err:";
      piece += text;
      if (end == LineEnd::continued) piece += "+";
      if (end == LineEnd::partial) piece += "~";
      pieces.push_back(piece);
    };
  }
};

}  // namespace

TEST_CASE("output order: lines of two streams pass at once when no line is unfinished") {
  OutputOrder order;
  Recorder r;
  order.deliver(Stream::out, "a", LineEnd::newline, r.sink());
  order.deliver(Stream::err, "b", LineEnd::newline, r.sink());
  order.deliver(Stream::out, "c", LineEnd::carriage_return, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:a", "err:b", "out:c"});
  CHECK(order.held_bytes() == 0);
}

TEST_CASE("output order: the other stream waits for the end of a long line") {
  OutputOrder order;
  Recorder r;
  order.deliver(Stream::out, "long-1", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "short", LineEnd::newline, r.sink());
  order.deliver(Stream::err, "bar", LineEnd::carriage_return, r.sink());
  CHECK(order.held_bytes() == 8);
  order.deliver(Stream::out, "long-2", LineEnd::continued, r.sink());
  order.deliver(Stream::out, "long-3", LineEnd::newline, r.sink());
  order.deliver(Stream::out, "next", LineEnd::newline, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:long-1+", "out:long-2+", "out:long-3",
                                             "err:short", "err:bar", "out:next"});
  CHECK(order.held_bytes() == 0);
}

TEST_CASE("output order: a line the rank paused in the middle of holds the other stream too") {
  // A rank starved of CPU half-way through writing a 100 KB line: the agent
  // sends what it has after 500 ms (partial), and the rest comes later.
  OutputOrder order;
  Recorder r;
  order.deliver(Stream::out, "first-half", LineEnd::partial, r.sink());
  order.deliver(Stream::err, "warning", LineEnd::newline, r.sink());
  CHECK(order.held_bytes() == 7);
  order.deliver(Stream::out, "second-half", LineEnd::newline, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:first-half~", "out:second-half", "err:warning"});
  CHECK(order.held_bytes() == 0);
}

TEST_CASE("output order: a held long line of its own makes the first stream wait in turn") {
  OutputOrder order;
  Recorder r;
  order.deliver(Stream::out, "o1", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "e1", LineEnd::continued, r.sink());
  order.deliver(Stream::out, "o2", LineEnd::newline, r.sink());  // releases e1, which is unfinished
  order.deliver(Stream::out, "o3", LineEnd::newline, r.sink());  // waits for e's line
  order.deliver(Stream::err, "e2", LineEnd::newline, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:o1+", "out:o2", "err:e1+", "err:e2", "out:o3"});
}

TEST_CASE("output order: a line past the limit stops holding the other stream") {
  OutputOrder order(10);
  Recorder r;
  order.deliver(Stream::out, "123456", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "held", LineEnd::newline, r.sink());
  CHECK(r.pieces.size() == 1);
  order.deliver(Stream::out, "789012", LineEnd::continued, r.sink());  // 12 bytes: over
  CHECK(r.pieces == std::vector<std::string>{"out:123456+", "out:789012+", "err:held"});
  order.deliver(Stream::err, "free", LineEnd::newline, r.sink());
  order.deliver(Stream::out, "end", LineEnd::newline, r.sink());
  order.deliver(Stream::out, "x", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "waits", LineEnd::newline, r.sink());
  CHECK(r.pieces.back() == "out:x+");
}

TEST_CASE("output order: too much waiting lets the waiting stream go") {
  OutputOrder order(10);
  Recorder r;
  order.deliver(Stream::out, "a", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "123456", LineEnd::newline, r.sink());
  order.deliver(Stream::err, "789012", LineEnd::newline, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:a+", "err:123456", "err:789012"});
}

TEST_CASE("output order: a closed stream ends its unfinished line, flush empties all") {
  OutputOrder order;
  Recorder r;
  order.deliver(Stream::out, "cut", LineEnd::continued, r.sink());
  order.deliver(Stream::err, "e", LineEnd::newline, r.sink());
  order.stream_closed(Stream::err, r.sink());  // not the unfinished one: nothing moves
  CHECK(r.pieces.size() == 1);
  order.stream_closed(Stream::out, r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:cut+", "err:e"});
  order.deliver(Stream::err, "e2", LineEnd::continued, r.sink());
  order.deliver(Stream::out, "o", LineEnd::newline, r.sink());
  order.flush(r.sink());
  CHECK(r.pieces == std::vector<std::string>{"out:cut+", "err:e", "err:e2+", "out:o"});
}
