#include "agent/gpu_helper_process.h"

#include <doctest/doctest.h>

#include <csignal>
#include <cstring>

using namespace dlaunch;

TEST_CASE("gpu_helper_image: the agent carries an ELF executable") {
  const auto image = gpu_helper_image();
  REQUIRE(image.size() > 1000);
  CHECK(image.substr(0, 4) == std::string_view("\x7f"
                                               "ELF",
                                               4));
}

TEST_CASE("split_helper_line") {
  CHECK(split_helper_line("id\tabc") == std::vector<std::string>{"id", "abc"});
  CHECK(split_helper_line("gpu\t1\t2\t-1\tNVIDIA H100 80GB HBM3") ==
        std::vector<std::string>{"gpu", "1", "2", "-1", "NVIDIA H100 80GB HBM3"});
  CHECK(split_helper_line("done") == std::vector<std::string>{"done"});
  CHECK(split_helper_line("a\t") == std::vector<std::string>{"a", ""});
}

TEST_CASE("GpuHelperProcess: the carried helper starts and answers in lines") {
  std::string error;
  // nvml: this machine's GPUs, or why there are none; either way a known line.
  auto helper = GpuHelperProcess::start("nvml", {}, error);
  REQUIRE_MESSAGE(helper, error);
  auto line = helper->read_line(std::chrono::seconds(20));
  REQUIRE(line);
  const auto key = split_helper_line(*line)[0];
  CHECK((key == "error" || key == "driver" || key == "cuda" || key == "gpu"));
  if (key == "error") CHECK(line->find("NVML") != std::string::npos);

  // nccl: an unknown command is refused by name, and the helper ends.
  // SIGPIPE ignored, as the agent has it (agent.cpp): a helper that has
  // already ended (no libnccl here) makes write_line false instead of killing
  // this process, which once ended the whole unit run.
  std::signal(SIGPIPE, SIG_IGN);
  auto nccl = GpuHelperProcess::start("nccl", {"NCCL_SOCKET_IFNAME=lo"}, error);
  REQUIRE_MESSAGE(nccl, error);
  nccl->write_line("bogus");
  std::vector<std::string> lines;
  while (auto l = nccl->read_line(std::chrono::seconds(20))) lines.push_back(*l);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().starts_with("error\t"));
}
