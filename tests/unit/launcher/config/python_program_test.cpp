#include "launcher/config/python_program.h"

#include <doctest/doctest.h>

using namespace dlaunch;
using Command = std::vector<std::string>;

namespace {
Command run(Command command, PythonChoice choice = {}) {
  auto out = python_command(std::move(command), choice);
  REQUIRE(out.ok());
  return *out;
}
}  // namespace

TEST_CASE("a .py program runs with python3 -u, as torchrun runs it; others as they are") {
  CHECK(run({"train.py", "--lr", "3e-4"}) == Command{"python3", "-u", "train.py", "--lr", "3e-4"});
  CHECK(run({"/opt/code/train.py"}) == Command{"python3", "-u", "/opt/code/train.py"});
  CHECK(run({"mnist_dist", "--epochs", "1"}) == Command{"mnist_dist", "--epochs", "1"});
  CHECK(run({"python3", "train.py"}) == Command{"python3", "train.py"});
  CHECK(run({"train.pyc"}) == Command{"train.pyc"});
}

TEST_CASE("-m runs a module; --python and $DLAUNCH_PYTHON choose the interpreter") {
  CHECK(run({"json.tool", "in.json"}, {.module = true}) ==
        Command{"python3", "-u", "-m", "json.tool", "in.json"});
  CHECK(run({"train.py"}, {.python_env = "/opt/venv/bin/python"}) ==
        Command{"/opt/venv/bin/python", "-u", "train.py"});
  CHECK(run({"train.py"}, {.python = "/usr/bin/python3", .python_env = "/opt/venv/bin/python"}) ==
        Command{"/usr/bin/python3", "-u", "train.py"});
  CHECK(run({"train.py"}, {.python_env = ""}) == Command{"python3", "-u", "train.py"});
}

TEST_CASE("--no-python runs the program as it is; with -m it is an error") {
  CHECK(run({"train.py", "x"}, {.no_python = true}) == Command{"train.py", "x"});
  const auto both = python_command({"m"}, {.module = true, .no_python = true});
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().find("-m/--module and --no-python") != std::string::npos);
}
