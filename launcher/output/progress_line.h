// A progress bar redrawn in place. When stdout and stderr are the same
// terminal and a single rank draws progress ("\r" segments, tqdm), its bar is
// drawn on the last line of the terminal and rewritten as it moves, instead of
// printed as a line a second; every other line is printed above it and the bar
// drawn again below. Once a second rank draws progress, bars go back to being
// lines. Pure: it says what bytes to write.
#pragma once

#include <optional>
#include <string>

namespace dlaunch {

class ProgressLine {
 public:
  // Whether `rank`'s moving text is drawn in place. False for good once two
  // ranks have drawn: then call close() and print lines.
  bool claims(int rank);
  // The bytes that draw `prefixed` (the bar with its "[R] " prefix, no newline).
  std::string draw(const std::string& prefixed);
  // The bytes for a finished line (`prefixed_line` ends in "\n") from `rank`:
  // the bar's own rank's line replaces the bar (tqdm's last update); another
  // rank's goes above the bar, which is drawn again.
  std::string line(int rank, const std::string& prefixed_line);
  // Ends a bar still on screen with a newline, so what follows starts clean.
  std::string close();
  bool drawn() const { return drawn_; }

 private:
  std::optional<int> owner_;
  bool shared_ = false;
  bool drawn_ = false;  // the bar is on screen, its line not ended
  std::string bar_;
};

}  // namespace dlaunch
