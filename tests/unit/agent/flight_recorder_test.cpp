#include "agent/flight_recorder.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "launcher/hang/flight_analysis.h"

using namespace dlaunch;
using dlaunch::testing::ScratchDir;

TEST_CASE("flight recorder: both spellings set, what the user set kept") {
  EnvMap env;
  const auto paths = add_flight_recorder_environment(env, "/fr");
  CHECK(env["TORCH_FR_BUFFER_SIZE"] == "2000");
  CHECK(env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000");
  CHECK(env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1");
  CHECK(env["TORCH_FR_DUMP_TEMP_FILE"] == "/fr/nccl_trace_rank_");
  CHECK(env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == "/fr/nccl_trace_rank_");
  CHECK(env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] == "/fr/nccl_trace_rank_");
  CHECK(paths.dump_prefix == "/fr/nccl_trace_rank_");
  CHECK(paths.pipe_prefix == "/fr/nccl_trace_rank_");

  EnvMap mine{{"TORCH_NCCL_TRACE_BUFFER_SIZE", "0"},
              {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/mine/dump_"},
              {"TORCH_NCCL_DUMP_ON_TIMEOUT", "0"}};
  const auto kept = add_flight_recorder_environment(mine, "/fr");
  CHECK(mine["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "0");  // turned off by the user: off
  CHECK_FALSE(mine.contains("TORCH_FR_BUFFER_SIZE"));
  CHECK(mine["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "0");
  CHECK_FALSE(mine.contains("TORCH_FR_DUMP_TEMP_FILE"));
  CHECK(kept.dump_prefix == "/mine/dump_");
}

TEST_CASE("flight recorder: a byte in the rank's pipe, then the dump it makes") {
  ScratchDir dir;
  const FlightRecorderPaths paths{dir.path() + "/trace_", dir.path() + "/trace_"};
  const std::string pipe = paths.pipe_prefix + "3.pipe";
  // No pipe (no NCCL process group): nothing asked, nothing waited for.
  CHECK_FALSE(ask_flight_record(paths, 3).asked);
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  // A pipe no one reads: the open fails at once, nothing asked.
  CHECK_FALSE(ask_flight_record(paths, 3).asked);
  // As torch's watchdog: reads the pipe, then writes the dump.
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  const auto asked = ask_flight_record(paths, 3);
  CHECK(asked.asked);
  CHECK(asked.before_ns == -1);
  std::thread watchdog([&] {
    char byte = 0;
    while (::read(reader, &byte, 1) != 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::ofstream(paths.dump_prefix + "3", std::ios::binary) << std::string("\x80\x02pickle", 8);
  });
  const auto record = collect_flight_record(paths, 3, asked, std::chrono::seconds(10));
  watchdog.join();
  ::close(reader);
  CHECK(record.bytes == std::string("\x80\x02pickle", 8));
  CHECK(record.note.find("flight recorder: 8 bytes from ") == 0);
  // Not asked (a stopped rank), a dump of a watchdog timeout is still carried.
  const auto old = collect_flight_record(paths, 3, FlightRecordAsked{}, std::chrono::seconds(1));
  CHECK(old.bytes.size() == 8);
}

TEST_CASE("flight recorder analysis: the report's lines that name the problem") {
  const auto findings = flight_findings(
      "loading 2 files\n"
      "Not all ranks joining collective 5 at entry 4\n"
      "group info: 0:default_pg\n"
      "collective: nccl:all_reduce\n"
      "missing ranks: {1}\n"
      "input sizes: [[3, 4]]\n");
  CHECK(findings == std::vector<std::string>{"Not all ranks joining collective 5 at entry 4",
                                             "group info: 0:default_pg",
                                             "collective: nccl:all_reduce", "missing ranks: {1}"});
  CHECK(flight_findings("").empty());
}
