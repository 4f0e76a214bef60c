#include "event_writer.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "crc32c.h"

namespace mnist {
namespace {

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<std::uint64_t>(field << 3 | wire_type));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// Protobuf fixed32/fixed64 and TFRecord lengths are little-endian: the host's
// byte order, which the static_assert pins.
static_assert(std::endian::native == std::endian::little);

template <class T>
void put_fixed(std::string& out, const T& value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event{wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5}
std::string event(double wall_time, std::int64_t step, const std::string& tail) {
  std::string e;
  put_key(e, 1, 1);
  put_fixed(e, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<std::uint64_t>(step));
  e += tail;
  return e;
}

}  // namespace

EventWriter::EventWriter(const std::string& dir) {
  std::error_code ignored;  // fopen below reports a directory we could not make
  std::filesystem::create_directories(dir, ignored);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<long long>(now_seconds())) +
          "." + host;
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr)
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  std::string version;
  put_bytes(version, 3, "brain.Event:2");
  write_record(event(now_seconds(), 0, version));
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

void EventWriter::scalar(const std::string& tag, float value, std::int64_t step) {
  std::string v;  // Summary.Value{tag = 1, simple_value = 2 (float)}
  put_bytes(v, 1, tag);
  put_key(v, 2, 5);
  put_fixed(v, value);
  std::string summary;  // Summary{value = 1}
  put_bytes(summary, 1, v);
  std::string tail;
  put_bytes(tail, 5, summary);
  write_record(event(now_seconds(), step, tail));
}

void EventWriter::write_record(const std::string& data) {
  std::string header;
  put_fixed(header, static_cast<std::uint64_t>(data.size()));
  std::string record = header;
  put_fixed(record, masked_crc32c(header.data(), header.size()));
  record += data;
  put_fixed(record, masked_crc32c(data.data(), data.size()));
  std::fwrite(record.data(), 1, record.size(), file_);
  std::fflush(file_);  // TensorBoard tails the file while training runs
}

}  // namespace mnist
