#include "launcher/web/tensorboard_scalars.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace dlaunch {
namespace {

// The first `size` bytes of `bytes` as a little-endian number (protobuf's
// fixed32/fixed64, TFRecord's length); `bytes` holds at least that many.
std::uint64_t little_endian(std::string_view bytes, std::size_t size) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < size; ++i)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return value;
}

// A protobuf message's fields, read in order; a malformed one ends the read.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : rest_(bytes) {}

  struct Field {
    std::uint32_t number = 0;
    std::uint32_t wire = 0;
    std::uint64_t varint = 0;  // wire 0, and wire 1/5's raw bits
    std::string_view bytes;    // wire 2
  };

  std::optional<Field> next() {
    const auto key = varint();
    if (!key) return std::nullopt;
    Field f;
    f.number = static_cast<std::uint32_t>(*key >> 3);
    f.wire = static_cast<std::uint32_t>(*key & 7);
    switch (f.wire) {
      case 0: {
        const auto v = varint();
        if (!v) return std::nullopt;
        f.varint = *v;
        return f;
      }
      case 1:
        return fixed(f, 8);
      case 5:
        return fixed(f, 4);
      case 2: {
        const auto size = varint();
        if (!size || *size > rest_.size()) return std::nullopt;
        f.bytes = rest_.substr(0, *size);
        rest_.remove_prefix(*size);
        return f;
      }
      default:
        return std::nullopt;
    }
  }

 private:
  std::optional<std::uint64_t> varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    return std::nullopt;
  }
  std::optional<Field> fixed(Field f, std::size_t size) {
    if (rest_.size() < size) return std::nullopt;
    f.varint = little_endian(rest_, size);
    rest_.remove_prefix(size);
    return f;
  }

  std::string_view rest_;
};

double as_double(std::uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

float as_float(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f = 0;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// TensorProto: float_val (5) or double_val (6), packed or not; its first value.
std::optional<double> tensor_scalar(std::string_view bytes) {
  ProtoReader r(bytes);
  while (auto f = r.next()) {
    if (f->number == 5 && f->wire == 5) return as_float(f->varint);
    if (f->number == 6 && f->wire == 1) return as_double(f->varint);
    if (f->number == 5 && f->wire == 2 && f->bytes.size() >= 4)
      return as_float(little_endian(f->bytes, 4));
    if (f->number == 6 && f->wire == 2 && f->bytes.size() >= 8)
      return as_double(little_endian(f->bytes, 8));
  }
  return std::nullopt;
}

void read_event(std::string_view event, std::vector<ScalarPoint>& out) {
  double wall_time = 0;
  std::int64_t step = 0;
  std::vector<std::string_view> summaries;
  ProtoReader r(event);
  while (auto f = r.next()) {
    if (f->number == 1 && f->wire == 1) wall_time = as_double(f->varint);
    if (f->number == 2 && f->wire == 0) step = static_cast<std::int64_t>(f->varint);
    if (f->number == 5 && f->wire == 2) summaries.push_back(f->bytes);
  }
  for (const auto summary : summaries) {
    ProtoReader values(summary);
    while (auto v = values.next()) {
      if (v->number != 1 || v->wire != 2) continue;
      ScalarPoint p;
      p.step = step;
      p.wall_time = wall_time;
      std::optional<double> value;
      ProtoReader fields(v->bytes);
      while (auto f = fields.next()) {
        if (f->number == 1 && f->wire == 2) p.tag = std::string(f->bytes);
        if (f->number == 2 && f->wire == 5) value = as_float(f->varint);
        if (f->number == 8 && f->wire == 2 && !value) value = tensor_scalar(f->bytes);
      }
      if (!value || p.tag.empty()) continue;
      p.value = *value;
      out.push_back(std::move(p));
    }
  }
}

}  // namespace

std::vector<ScalarPoint> parse_event_scalars(std::string_view file_bytes) {
  std::vector<ScalarPoint> out;
  // Each record: u64 length, u32 CRC of it, the data, u32 CRC of the data.
  while (file_bytes.size() >= 16) {
    const std::uint64_t length = little_endian(file_bytes, 8);
    if (length > file_bytes.size() - 16) break;  // cut short: still being written
    read_event(file_bytes.substr(12, length), out);
    file_bytes.remove_prefix(12 + length + 4);
  }
  return out;
}

std::vector<ScalarPoint> read_event_scalars(const std::string& dir, std::size_t max_points) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) &&
        it->path().filename().string().find("tfevents") != std::string::npos)
      files.push_back(it->path());
  }
  // Names end in the writer's start time: file order is time order per run.
  std::sort(files.begin(), files.end());
  std::vector<ScalarPoint> all;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto points = parse_event_scalars(bytes);
    all.insert(all.end(), std::make_move_iterator(points.begin()),
               std::make_move_iterator(points.end()));
  }
  if (all.size() > max_points)
    all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(max_points));
  return all;
}

}  // namespace dlaunch
