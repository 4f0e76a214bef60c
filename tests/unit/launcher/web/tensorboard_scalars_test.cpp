#include "launcher/web/tensorboard_scalars.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace dlaunch;

namespace {

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    if (v) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v);
  return out;
}

std::string field(int number, int wire, const std::string& body) {
  return varint(static_cast<std::uint64_t>(number << 3 | wire)) +
         (wire == 2 ? varint(body.size()) : "") + body;
}

template <class T>
std::string raw(T value) {
  std::string out(sizeof value, '\0');
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

// An Event with wall_time, step and one scalar: simple_value, or a tensor.
std::string event(std::int64_t step, const std::string& tag, float value, bool as_tensor = false) {
  const std::string v = field(1, 2, tag) + (as_tensor ? field(8, 2, field(5, 5, raw(value)))
                                                      : field(2, 5, raw(value)));
  return field(1, 1, raw(1.8e9 + static_cast<double>(step))) +
         field(2, 0, varint(static_cast<std::uint64_t>(step))) + field(5, 2, field(1, 2, v));
}

// TFRecord framing; the CRCs are not checked by the reader, so zeros here.
std::string record(const std::string& data) {
  return raw(static_cast<std::uint64_t>(data.size())) + raw(std::uint32_t{0}) + data +
         raw(std::uint32_t{0});
}

}  // namespace

TEST_CASE("event files: scalars as simple values and as tensors, in file order") {
  const std::string file = record(field(3, 2, "brain.Event:2")) + record(event(10, "loss", 2.5f)) +
                           record(event(20, "loss", 1.25f)) +
                           record(event(20, "accuracy", 0.75f, true));
  const auto points = parse_event_scalars(file);
  REQUIRE(points.size() == 3);
  CHECK(points[0].tag == "loss");
  CHECK(points[0].step == 10);
  CHECK(points[0].value == doctest::Approx(2.5));
  CHECK(points[0].wall_time == doctest::Approx(1.8e9 + 10));
  CHECK(points[1].value == doctest::Approx(1.25));
  CHECK(points[2].tag == "accuracy");
  CHECK(points[2].value == doctest::Approx(0.75));
}

TEST_CASE("event files: a record cut short (still being written) ends the read, garbage too") {
  const std::string whole = record(event(1, "loss", 1.0f)) + record(event(2, "loss", 0.5f));
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    const auto points = parse_event_scalars(std::string_view(whole).substr(0, cut));
    CHECK(points.size() <= 1);
  }
  CHECK(parse_event_scalars(whole).size() == 2);
  CHECK(parse_event_scalars(std::string(64, '\xff')).empty());
  CHECK(parse_event_scalars(record(std::string(40, '\xff'))).empty());
}
