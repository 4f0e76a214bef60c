// dlaunch: the command-line entry point. Everything it does lives in the
// launcher library; the first word of the command line picks the command.
// Run under the relay's name (by a coordinator with more agents than it may
// hold connections), it is a rendezvous relay instead.
#include <cstring>

#include "common/log.h"
#include "launcher/cli/commands.h"
#include "rendezvous/relay_process.h"

int main(int argc, char** argv) {
  dlaunch::log::set_program_name("dlaunch");
  if (argc > 0 && std::strcmp(argv[0], dlaunch::kRelayProgramName) == 0)
    return dlaunch::run_rendezvous_relay();
  return dlaunch::run_command_line(argc, argv);
}
