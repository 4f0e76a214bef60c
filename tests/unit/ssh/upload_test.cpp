#include "ssh/upload.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "protocol/sha256.h"
#include "tests/unit/scoped_env.h"
#include "tests/unit/scratch_dir.h"
#include "transfer/digest_cache.h"

using namespace dlaunch;
using dlaunch::testing::ScratchDir;
using dlaunch::testing::write_file;

TEST_CASE("the agent's SHA-256 is remembered between runs while the file is unchanged") {
  ScratchDir dir;
  ScratchDir cache;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", cache.path());
  const auto agent = (dir.dir() / "dlaunch-agent").string();
  write_file(agent, "an agent");
  // A digest remembered by an earlier run for this very file is taken as it
  // is, without reading the file: planted, it shows.
  struct stat st {};
  REQUIRE(::stat(agent.c_str(), &st) == 0);
  remember_digest(agent, st, std::string(32, 'p'));
  CHECK(agent_sha256(agent) == to_hex(std::string(32, 'p')));
  // Another file is hashed, and remembered for the next run.
  const auto other = (dir.dir() / "dlaunch-agent-aarch64").string();
  write_file(other, "another agent");
  const std::string digest = agent_sha256(other);
  CHECK(digest == to_hex(sha256("another agent")));
  REQUIRE(::stat(other.c_str(), &st) == 0);
  const auto remembered = cached_digest(other, st);
  REQUIRE(remembered.has_value());
  CHECK(to_hex(*remembered) == digest);
}

TEST_CASE("an agent reached through a symbolic link is hashed as the file it names") {
  ScratchDir dir;
  ScratchDir cache;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", cache.path());
  const auto agent = (dir.dir() / "dlaunch-agent-real").string();
  write_file(agent, "the agent itself");
  const auto link = (dir.dir() / "dlaunch-agent").string();
  REQUIRE(::symlink(agent.c_str(), link.c_str()) == 0);
  CHECK(agent_sha256(link) == to_hex(sha256("the agent itself")));
}
