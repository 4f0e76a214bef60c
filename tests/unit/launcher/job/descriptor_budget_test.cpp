#include <doctest/doctest.h>

#include "launcher/job/descriptor_budget.h"

using namespace dlaunch;

TEST_CASE("descriptors: 10,000 manual-mode nodes fit under 20,000; the logs get the rest") {
  const auto b = descriptor_budget({10'000, 0, 1}, 20'000);
  CHECK(b.problem.empty());
  CHECK(b.needed == 10'000 + 3 + kOwnDescriptors);
  CHECK(b.rank_log_files == 20'000 - b.needed);
}

TEST_CASE("descriptors: 20,000 nodes under a limit of 20,000 are refused at once, saying why") {
  const auto b = descriptor_budget({20'000, 0, 1}, 20'000);
  CHECK(b.problem ==
        "a job of 20,000 nodes needs about 20,131 open files on this machine (one connection per "
        "agent, dlaunch's own and a few rank logs), but this process may open 20,000: raise the "
        "hard limit (`ulimit -Hn`; LimitNOFILE= in a systemd unit, nofile in "
        "/etc/security/limits.conf) or run fewer nodes");
}

TEST_CASE("descriptors: hosts over SSH count their sessions too") {
  CHECK(descriptor_budget({400, 400, 0}, 1024).problem.empty());  // 400 + 400 + 64 + 64
  const auto b = descriptor_budget({1000, 1000, 0}, 1024);
  CHECK(b.problem.find("one SSH session per host") != std::string::npos);
  // A generous limit caps the open log files, not the job.
  CHECK(descriptor_budget({4, 0, 4}, 1'048'576).rank_log_files == 65'536);
}
