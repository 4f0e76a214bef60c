// dlaunch: the command-line entry point. Everything it does lives in the
// launcher library; this file only wires the pieces in order.
#include "launcher/cli/run.h"

int main(int argc, char** argv) {
  return dlaunch::run_dlaunch(argc, argv);
}
