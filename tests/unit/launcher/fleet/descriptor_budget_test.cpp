#include <doctest/doctest.h>

#include "launcher/fleet/descriptor_budget.h"

using namespace dlaunch;

TEST_CASE("descriptors: 10,000 manual-mode nodes fit under 20,000; the logs get the rest") {
  const auto b = descriptor_budget({10'000, 0, 1}, 20'000);
  CHECK(b.problem.empty());
  CHECK(b.needed == 10'000 + 3 + kOwnDescriptors);
  CHECK(b.handshake_room == kHandshakeRoom);
  CHECK(b.sessions_each() == 10'000 + kHandshakeRoom);
  CHECK(b.rank_log_files == 20'000 - b.needed - kHandshakeRoom);
}

TEST_CASE("descriptors: handshakes take half of what is left at most, never the logs' minimum") {
  // 2 nodes under 1,024: 1,024 - 2 - 3 - 64 = 955 left, 64 of them the logs'.
  const auto b = descriptor_budget({2, 0, 1}, 1024);
  CHECK(b.relays == 0);
  CHECK(b.handshake_room == (955 - kMinRankLogFiles) / 2);
  CHECK(b.sessions_each() == 2 + b.handshake_room);
  CHECK(b.rank_log_files == 955 - b.handshake_room);
  CHECK(b.needed + b.handshake_room + b.rank_log_files == 1024);
}

TEST_CASE("descriptors: hosts over SSH count their sessions too") {
  CHECK(descriptor_budget({400, 400, 0}, 1024).problem.empty());  // 400 + 400 + 64 + 64
  const auto b = descriptor_budget({1000, 1000, 0}, 1024);
  CHECK(b.problem.find("one SSH session per host") != std::string::npos);
  // A generous limit caps the open log files, not the job.
  CHECK(descriptor_budget({4, 0, 4}, 1'048'576).rank_log_files == 65'536);
}

TEST_CASE("descriptors: 20,000 nodes under a limit of 20,000 go through relay processes") {
  const auto b = descriptor_budget({20'000, 0, 1}, 20'000);
  CHECK(b.problem.empty());
  CHECK(b.sessions_per_relay == 20'000 - kRelayOwnDescriptors);
  CHECK(b.relays == 2);
  CHECK(b.relays * b.sessions_per_relay >= 20'000 + kRelayMargin);
  // The coordinator holds one socket per relay, not one per agent.
  CHECK(b.needed == 2 + 3 + kOwnDescriptors);
  CHECK(b.rank_log_files == 20'000 - b.needed);
  // 2,000 under the common 1,024: three relays of 960.
  const auto small = descriptor_budget({2'000, 0, 1}, 1'024);
  CHECK(small.problem.empty());
  CHECK(small.relays == 3);
  CHECK(small.sessions_per_relay == 960);
}

TEST_CASE("descriptors: relays hold the agents' connections, not SSH sessions") {
  // 600 hosts over SSH under 1,024: their connections go to one relay, their
  // sessions stay here and fit.
  const auto fits = descriptor_budget({600, 600, 0}, 1024);
  CHECK(fits.problem.empty());
  CHECK(fits.relays == 1);
  CHECK(fits.needed == 600 + kOwnDescriptors + 1);
  const auto b = descriptor_budget({1000, 1000, 0}, 1024);
  CHECK(b.problem ==
        "a job of 1,000 nodes needs about 1,130 open files on this machine (one SSH session per "
        "host, dlaunch's own and a few rank logs), but this process may open 1,024: raise the "
        "hard limit (`ulimit -Hn`; LimitNOFILE= in a systemd unit, nofile in "
        "/etc/security/limits.conf) or run fewer nodes");
}
