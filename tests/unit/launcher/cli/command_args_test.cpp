#include "launcher/cli/command_args.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
using dlaunch::testing::ScratchDir;

namespace {

template <class Parse>
auto parse_words(Parse parse, std::vector<const char*> words) {
  return parse(static_cast<int>(words.size()), words.data());
}

}  // namespace

TEST_CASE("job commands: the parsed arguments are what the words said") {
  auto logs = parse_words(parse_logs_args, {"logs", "--log-dir", "/s", "j1", "-r", "3", "-f"});
  REQUIRE(logs.ok());
  CHECK(logs->log_dir == "/s");
  CHECK(logs->name == "j1");
  CHECK(logs->rank == 3);
  CHECK(logs->follow);
  CHECK_FALSE(logs->all_ranks);
  CHECK(logs->tail == -1);

  auto stop = parse_words(parse_stop_args, {"stop", "j2", "--grace", "30"});
  REQUIRE(stop.ok());
  CHECK(stop->grace_s == 30);
  CHECK(stop->wait_s == 60);

  auto list = parse_words(parse_list_args, {"list", "--status", "FAILED,LOST", "--json"});
  REQUIRE(list.ok());
  CHECK(list->statuses_text == std::vector<std::string>{"FAILED", "LOST"});
  CHECK(list->json_out);

  auto del = parse_words(parse_delete_args, {"delete", "a", "b"});
  REQUIRE(del.ok());
  CHECK(del->names == std::vector<std::string>{"a", "b"});
}

TEST_CASE("job commands: a usage error fails with its exit code, --help with 0") {
  auto bad = parse_words(parse_logs_args, {"logs", "j1", "-r", "1", "--all-ranks"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == kExitUsage);
  auto help = parse_words(parse_get_args, {"get", "--help"});
  REQUIRE_FALSE(help.ok());
  CHECK(help.error() == kExitOk);
}

TEST_CASE("job commands: a command runs on arguments made without a command line") {
  ScratchDir state;
  GetArgs get;
  get.log_dir = state.path();
  get.name = "nothing-here";
  CHECK(get_job(get) == kExitFailure);  // no such job, said on stderr
  ListArgs list;
  list.log_dir = state.path();
  list.statuses_text = {"DONE"};
  CHECK(list_jobs(list) == kExitUsage);  // no such status
  list.statuses_text = {"FAILED"};
  CHECK(list_jobs(list) == kExitOk);
}
