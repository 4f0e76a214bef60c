#include "launcher/hosts/diagnostic.h"

namespace dlaunch {

std::string Diagnostic::to_string() const {
  // Line 0: the file as a whole (it could not be read).
  if (line <= 0) return file + ": " + message;
  if (column <= 0) return file + ":" + std::to_string(line) + ": " + message;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

}  // namespace dlaunch
