// dlaunch: the command-line entry point. Everything it does lives in the
// launcher library; the first word of the command line picks the command.
#include "launcher/cli/commands.h"

int main(int argc, char** argv) {
  return dlaunch::run_command_line(argc, argv);
}
