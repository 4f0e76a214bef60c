// dlaunch-agent: started by dlaunch on each node (locally or over SSH) with its
// launch spec on stdin. Not meant to be run by hand.
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/agent.h"
#include "agent/guardian.h"
#include "agent/launch_spec.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--version") == 0)) {
    std::puts("dlaunch-agent 0.1.0");
    return 0;
  }
  std::string error;
  auto spec = dlaunch::read_launch_spec(0, &error);
  if (!spec) {
    std::fprintf(stderr, "dlaunch-agent: %s\n", error.c_str());
    return 2;
  }
  return dlaunch::run_guarded([&spec] { return dlaunch::run_agent(std::move(*spec), 0); });
}
