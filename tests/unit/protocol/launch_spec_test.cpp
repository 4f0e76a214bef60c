#include <doctest/doctest.h>

#include <unistd.h>
#include <optional>

#include "protocol/launch_spec.h"

using namespace dlaunch;

namespace {
// `s` written to a pipe and read back as the agent reads its stdin.
std::optional<LaunchSpec> through_a_pipe(const LaunchSpec& s) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string bytes = encode_launch_spec(s);
  REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fds[1]);
  auto back = read_launch_spec(fds[0]);
  ::close(fds[0]);
  if (!back) return std::nullopt;
  return std::move(*back);
}
}  // namespace

TEST_CASE("launch spec round-trips through a pipe") {
  LaunchSpec s;
  s.secret = std::string("\0\1secret\xff", 9);
  s.rdzv_host = "198.18.0.1";
  s.rdzv_port = 40001;
  s.node_rank = 3;
  s.nproc = 2;
  s.host_name = "h";
  s.argv = {"prog", "a b", "$(x)", "\n", "\xc3\xa9"};
  s.env = {{"A", "1"}};
  s.echo = true;
  s.master_port = 29500;
  s.tensorboard_dir = "runs/exp 1";
  s.checkpoint_dir = "ckpt/run 1";
  s.workdir = "/data/job";
  s.workdir_required = true;
  s.pass_local_rank = true;
  s.container = {"localhost/train:1", "podman", "8g", {"/data:/data:ro", "/scratch:/tmp/s"}};
  s.container.image_file = std::string(64, 'c') + ".tar";
  s.git = {"git://198.18.0.1/repo.git", std::string(40, 'a'), "repo", "train-7"};
  auto back = through_a_pipe(s);
  REQUIRE(back.has_value());
  CHECK(back->git.url == s.git.url);
  CHECK(back->git.commit == s.git.commit);
  CHECK(back->git.name == "repo");
  CHECK(back->git.job == "train-7");
  CHECK(back->pass_local_rank);
  CHECK(back->container.image == "localhost/train:1");
  CHECK(back->container.engine == "podman");
  CHECK(back->container.shm_size == "8g");
  CHECK(back->container.mounts == s.container.mounts);
  CHECK(back->container.image_file == s.container.image_file);
  CHECK(back->secret == s.secret);
  CHECK(back->argv == s.argv);
  CHECK(back->rdzv_port == 40001);
  CHECK(back->env == s.env);
  CHECK(back->echo);
  CHECK(back->master_port == 29500);
  CHECK(back->tensorboard_dir == "runs/exp 1");
  CHECK(back->checkpoint_dir == "ckpt/run 1");
  CHECK(back->workdir == "/data/job");
  CHECK(back->workdir_required);
}

TEST_CASE("a truncated or foreign launch spec is refused with a message") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "hello world\n", 12) == 12);
  ::close(fds[1]);
  const auto spec = read_launch_spec(fds[0]);
  REQUIRE_FALSE(spec);
  CHECK(spec.error().find("launch spec") != std::string::npos);
  ::close(fds[0]);
}

TEST_CASE("a check agent's spec has no program; a job's must have one") {
  LaunchSpec s;
  s.check = true;
  const std::string bytes = encode_launch_spec(s);
  auto back = decode_launch_spec_body(std::string_view(bytes).substr(8));
  REQUIRE(back.has_value());
  CHECK(back->check);
  CHECK(back->argv.empty());
  s.check = false;
  const std::string job = encode_launch_spec(s);
  CHECK_FALSE(decode_launch_spec_body(std::string_view(job).substr(8)).has_value());
}

TEST_CASE("--nproc-per-node cpu and auto reach the agent as -1 and -2; below that is refused") {
  for (const int nproc : {-1, -2, -3}) {
    LaunchSpec s;
    s.argv = {"prog"};
    s.nproc = nproc;
    auto back = through_a_pipe(s);
    CHECK(back.has_value() == (nproc >= -2));
    if (back) CHECK(back->nproc == nproc);
  }
}
