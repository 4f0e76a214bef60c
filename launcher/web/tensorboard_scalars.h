// The scalars of TensorBoard event files (what --tensorboard-dir mirrors into
// <job dir>/tensorboard), read without TensorFlow so that `dlaunch ui` can draw
// loss and accuracy against step. An event file is TFRecord framing (length,
// its masked CRC, data, the data's masked CRC) around Event protobufs; a
// scalar is a Summary.Value's simple_value, or its one-element float or double
// tensor (what newer writers use). A record cut short at the end (a file still
// being written) ends the read; nothing past it is guessed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

struct ScalarPoint {
  std::string tag;  // "loss", "train/accuracy"
  std::int64_t step = 0;
  double wall_time = 0;  // unix seconds
  double value = 0;
};

// The scalars of one event file's bytes, in file order.
std::vector<ScalarPoint> parse_event_scalars(std::string_view file_bytes);

// Every scalar of the event files (names holding "tfevents") under `dir`, any
// depth; at most `max_points` (the newest files' last points are kept).
std::vector<ScalarPoint> read_event_scalars(const std::string& dir, std::size_t max_points);

}  // namespace dlaunch
