// One problem found in a host list or a file of settings (the hosts file, a
// hostfile, -H, Slurm's variables, an --env-file), where it is: printed as
// "file:line:col: message", the way compilers name a place.
#pragma once

#include <string>

namespace dlaunch {

struct Diagnostic {
  std::string file;  // a path, or what else the hosts came from ("-H", a variable)
  int line = 0;      // 0: the source as a whole
  int column = 0;    // 0: the line as a whole
  std::string message;
  std::string to_string() const;  // "file:line:col: message", dropping what is 0
};

}  // namespace dlaunch
