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
  CHECK(rank_argv({"python3", "-", "a"}, true, "0") == Argv{"python3", "-", "--local_rank=0", "a"});
  CHECK(rank_argv({"python3", "--", "t.py", "a"}, true, "0") ==
        Argv{"python3", "--", "t.py", "--local_rank=0", "a"});
  CHECK(rank_argv({"/venv/bin/python", "-c", "import sys", "x"}, true, "0") ==
        Argv{"/venv/bin/python", "-c", "import sys", "--local_rank=0", "x"});
  // A shell: after its script, or after -c's command string (the flag is
  // then its $0, and harmless).
  CHECK(rank_argv({"bash", "-e", "train.sh", "--lr", "1"}, true, "0") ==
        Argv{"bash", "-e", "train.sh", "--local_rank=0", "--lr", "1"});
  CHECK(rank_argv({"sh", "-c", "echo $RANK"}, true, "1") ==
        Argv{"sh", "-c", "echo $RANK", "--local_rank=1"});
  CHECK(rank_argv({"/bin/sh", "-ec", "run", "x"}, true, "1") ==
        Argv{"/bin/sh", "-ec", "run", "--local_rank=1", "x"});
  CHECK(rank_argv({"bash", "-o", "pipefail", "t.sh"}, true, "0") ==
        Argv{"bash", "-o", "pipefail", "t.sh", "--local_rank=0"});
  // Through env to the program it runs.
  CHECK(rank_argv({"env", "A=1", "python3", "t.py", "a"}, true, "0") ==
        Argv{"env", "A=1", "python3", "t.py", "--local_rank=0", "a"});
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
