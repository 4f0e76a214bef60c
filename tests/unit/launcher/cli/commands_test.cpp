#include "launcher/cli/commands.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/scratch_dir.h"

using namespace dlaunch;

namespace {

bool nothing_on_path(std::string_view) {
  return false;
}

FirstWord resolve(std::vector<const char*> args, const ProgramLookup& on_path = nothing_on_path) {
  args.insert(args.begin(), "dlaunch");
  return resolve_first_word(static_cast<int>(args.size()), args.data(), on_path);
}

}  // namespace

TEST_CASE("the table names each command once, and find_command looks them up") {
  std::vector<std::string_view> names;
  for (const auto& c : commands()) names.push_back(c.help.name);
  CHECK(names == std::vector<std::string_view>{"run", "list", "get", "logs", "stop", "stacks",
                                               "delete", "top", "check", "ui", "metrics"});
  for (const auto& c : commands()) {
    CHECK(find_command(c.help.name) == &c);
    CHECK_FALSE(c.help.summary.empty());
    CHECK_FALSE(c.help.examples.empty());
    CHECK((c.run != nullptr));
  }
  CHECK((find_command("list")->run == &list_command));
  CHECK((find_command("run")->run == &run_command));
  CHECK(find_command("lis") == nullptr);
  CHECK(find_command("") == nullptr);
}

TEST_CASE("a command word picks its row and is the command's argv[0]") {
  auto first = resolve({"logs", "job", "-f"});
  REQUIRE(first.command == find_command("logs"));
  CHECK(first.first_arg == 1);
  // A command wins over a program of the same name on PATH, as `top` always did.
  first = resolve({"top"}, [](std::string_view) { return true; });
  CHECK(first.command == find_command("top"));
}

TEST_CASE("dlaunch run ... is the launch that dlaunch ... is") {
  const char* argv[] = {"dlaunch", "run", "--nproc-per-node", "1", "--", "/bin/echo", "hi"};
  auto first = resolve_first_word(7, argv, nothing_on_path);
  REQUIRE(first.command == find_command("run"));
  REQUIRE(first.first_arg == 1);
  auto parsed = parse_options(7 - first.first_arg, argv + first.first_arg);
  REQUIRE(parsed.ok());
  CHECK(parsed->nproc_per_node == 1);
  CHECK(parsed->command == std::vector<std::string>{"/bin/echo", "hi"});
}

TEST_CASE("options, --, paths and programs on PATH start a launch as before") {
  const Command* launch = find_command("run");
  for (auto args : std::vector<std::vector<const char*>>{
           {},
           {"-n", "2", "prog"},
           {"--nproc-per-node", "1", "--", "list"},
           {"--help"},
           {"/bin/echo", "hi"},
           {"./list"},
           {"bin/train.sh"},
       }) {
    auto first = resolve(args);
    CHECK(first.command == launch);
    CHECK(first.first_arg == 0);
  }
  auto first =
      resolve({"python3", "x.py"}, [](std::string_view name) { return name == "python3"; });
  CHECK(first.command == launch);
}

TEST_CASE("a program named like a command runs after --") {
  const char* argv[] = {"dlaunch", "--", "list", "--all"};
  auto first = resolve_first_word(4, argv, nothing_on_path);
  REQUIRE(first.command == find_command("run"));
  auto parsed = parse_options(4 - first.first_arg, argv + first.first_arg);
  REQUIRE(parsed.ok());
  CHECK(parsed->command == std::vector<std::string>{"list", "--all"});
}

TEST_CASE("an unknown word is a usage error with a suggestion or the list of commands") {
  auto first = resolve({"lsit"});
  CHECK(first.command == nullptr);
  CHECK(first.error == "unknown command 'lsit'; did you mean 'list'?");
  CHECK(resolve({"stpo", "job"}).error == "unknown command 'stpo'; did you mean 'stop'?");
  first = resolve({"frobnicate"});
  CHECK(first.command == nullptr);
  CHECK(first.error ==
        "unknown command 'frobnicate' and no program 'frobnicate' on PATH; the commands are run, "
        "list, get, logs, stop, stacks, delete, top, check, ui, metrics");
  // An empty first word is the launch's to refuse, as an empty program name.
  CHECK(resolve({""}).command == find_command("run"));
}

TEST_CASE("program_on_path searches PATH like execvp") {
  CHECK(program_on_path("sh"));
  CHECK_FALSE(program_on_path("dlaunch-no-such-program"));
  CHECK_FALSE(program_on_path("tmp"));  // a directory in / is not a program
}

TEST_CASE("--help lists every command, its examples, and every launch option") {
  const char* argv[] = {"dlaunch", "--help"};
  const auto help_rows = command_help();
  auto parsed = parse_options(2, argv, help_rows);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().exit_code == 0);
  const std::string& help = parsed.error().message;
  for (const auto& c : commands()) {
    CHECK_MESSAGE(help.find("\n  " + std::string(c.help.name) + " ") != std::string::npos,
                  c.help.name);
    CHECK(help.find(c.help.summary) != std::string::npos);
    for (const auto& e : c.help.examples) CHECK(help.find(e.command_line) != std::string::npos);
  }
  for (const char* option : {"--hosts",        "--nproc-per-node", "--nnodes",
                             "--node-rank",    "--master-addr",    "--master-port",
                             "--rdzv-port",    "--rdzv-timeout",   "--secret-file",
                             "--name",         "--log-dir",        "--ranks-filter",
                             "--grace",        "--max-restarts",   "--heartbeat-timeout",
                             "--dry-run",      "--verbose",        "--quiet",
                             "--ssh-parallel", "--ssh-timeout",    "--accept-new-host-keys",
                             "--rdzv-via-ssh", "--version"}) {
    CHECK_MESSAGE(help.find(option) != std::string::npos, option);
  }
}

TEST_CASE("a Python file in the current directory is the program, as torchrun's first word") {
  dlaunch::testing::ScratchDir dir;
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  { std::ofstream(dir.path() + "/train.py") << "print(1)\n"; }
  const auto first = resolve({"train.py"});
  const auto missing = resolve({"other.py"});
  std::filesystem::current_path(before);
  CHECK(first.command == find_command("run"));
  CHECK(first.first_arg == 0);
  CHECK(missing.command == nullptr);  // no such file: still an unknown word
}
