// TensorBoard event files written without TensorFlow: TFRecord framing (length,
// masked CRC32C of the length, data, masked CRC32C of the data) around Event
// protobufs encoded by hand (wall_time, step, file_version, summary with scalar
// values). TensorBoard reads them like any other event file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace mnist {

class EventWriter {
 public:
  // Creates <dir>/events.out.tfevents.<unix time>.<hostname> and writes the
  // file_version record.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalar(const std::string& tag, float value, std::int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace mnist
