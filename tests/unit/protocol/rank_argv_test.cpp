#include "protocol/rank_argv.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace dlaunch;
using Argv = std::vector<std::string>;

TEST_CASE("--local_rank goes right after the script, before its arguments") {
  // deepspeed's launch: [python, -u, script, --local_rank=N, args...]
  CHECK(rank_argv({"/usr/bin/python3", "-u", "train.py", "--deepspeed", "ds.json"}, true, "1") ==
        Argv{"/usr/bin/python3", "-u", "train.py", "--local_rank=1", "--deepspeed", "ds.json"});
  // A module: after its name.
  CHECK(rank_argv({"python3", "-u", "-m", "pkg.train", "--lr", "1"}, true, "0") ==
        Argv{"python3", "-u", "-m", "pkg.train", "--local_rank=0", "--lr", "1"});
  // Interpreter options with a value are the interpreter's.
  CHECK(rank_argv({"python3.11", "-X", "dev", "-W", "ignore", "t.py", "a"}, true, "2") ==
        Argv{"python3.11", "-X", "dev", "-W", "ignore", "t.py", "--local_rank=2", "a"});
  CHECK(rank_argv({"/venv/bin/python", "-c", "import sys", "x"}, true, "0") ==
        Argv{"/venv/bin/python", "-c", "import sys", "--local_rank=0", "x"});
  // Any other program: after the program.
  CHECK(rank_argv({"./train.sh", "--lr", "1"}, true, "3") ==
        Argv{"./train.sh", "--local_rank=3", "--lr", "1"});
  // A script without arguments, and an interpreter without a script.
  CHECK(rank_argv({"python3", "t.py"}, true, "0") == Argv{"python3", "t.py", "--local_rank=0"});
  CHECK(rank_argv({"python3", "-u"}, true, "0") == Argv{"python3", "-u", "--local_rank=0"});
  // Not asked for: as it is.
  CHECK(rank_argv({"python3", "t.py", "a"}, false, "0") == Argv{"python3", "t.py", "a"});
  CHECK(script_arguments_start({}) == 0);
}
