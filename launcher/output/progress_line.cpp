#include "launcher/output/progress_line.h"

namespace dlaunch {
namespace {
// Back to the start of the line, and clear it: the bar may have been longer.
constexpr const char* kRewrite = "\r\x1b[K";
}  // namespace

bool ProgressLine::claims(int rank) {
  if (shared_) return false;
  if (!owner_) owner_ = rank;
  if (*owner_ == rank) return true;
  shared_ = true;
  return false;
}

std::string ProgressLine::draw(const std::string& prefixed) {
  bar_ = prefixed;
  drawn_ = true;
  return kRewrite + prefixed;
}

std::string ProgressLine::line(int rank, const std::string& prefixed_line) {
  if (!drawn_) return prefixed_line;
  if (owner_ && *owner_ == rank) {
    drawn_ = false;
    return kRewrite + prefixed_line;
  }
  return kRewrite + prefixed_line + bar_;
}

std::string ProgressLine::close() {
  if (!drawn_) return {};
  drawn_ = false;
  return "\n";
}

}  // namespace dlaunch
