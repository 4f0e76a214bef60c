#include <doctest/doctest.h>
#include <unistd.h>

#include "agent/launch_spec.h"
#include "agent/line_splitter.h"
#include "agent/rank_env.h"

using namespace dlaunch;

namespace {
std::vector<std::string> split(const std::vector<std::string>& chunks, std::size_t max,
                               bool finish = true) {
  LineSplitter s(max);
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  for (const auto& c : chunks) s.feed(c, sink);
  if (finish) s.finish(sink);
  return lines;
}
}  // namespace

TEST_CASE("lines split across reads are joined; empty lines kept") {
  CHECK(split({"ab", "c\nd", "e\n\nf\n"}, 100) == std::vector<std::string>{"abc", "de", "", "f"});
}

TEST_CASE("a partial last line is flushed at the end") {
  CHECK(split({"one\ntwo"}, 100) == std::vector<std::string>{"one", "two"});
  CHECK(split({"one\ntwo"}, 100, false) == std::vector<std::string>{"one"});
}

TEST_CASE("an overlong line is split into pieces and nothing is lost") {
  const std::string big(10, 'x');
  CHECK(split({big + "\n"}, 4) == std::vector<std::string>{"xxxx", "xxxx", "xx"});
  CHECK(split({"xxxx\n"}, 4) == std::vector<std::string>{"xxxx"});
  CHECK(split({"xx", "xx", "\n"}, 4) == std::vector<std::string>{"xxxx"});
  std::string joined;
  for (const auto& l : split({std::string(200'000, 'y')}, 64 * 1024)) {
    CHECK(l.size() <= 64 * 1024);
    joined += l;
  }
  CHECK(joined == std::string(200'000, 'y'));
}

TEST_CASE("rank environment is torchrun-compatible") {
  proto::Assign a{"job-7", 1, 3, 2, 3, 4, 2, 8, "10.1.2.3", 29555};
  LaunchSpec spec;
  spec.host_name = "gpu2";
  spec.interface = "eth1";
  spec.env = {{"NCCL_DEBUG", "INFO"}};
  const EnvMap env = rank_environment(a, 1, spec, {{"PATH", "/bin"}, {"GLOO_SOCKET_IFNAME", "lo"}});
  CHECK(env.at("RANK") == "5");
  CHECK(env.at("LOCAL_RANK") == "1");
  CHECK(env.at("WORLD_SIZE") == "8");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(env.at("GROUP_RANK") == "2");
  CHECK(env.at("GROUP_WORLD_SIZE") == "3");
  CHECK(env.at("ROLE_RANK") == "5");
  CHECK(env.at("ROLE_WORLD_SIZE") == "8");
  CHECK(env.at("MASTER_ADDR") == "10.1.2.3");
  CHECK(env.at("MASTER_PORT") == "29555");
  CHECK(env.at("TORCHELASTIC_RESTART_COUNT") == "1");
  CHECK(env.at("TORCHELASTIC_MAX_RESTARTS") == "3");
  CHECK(env.at("TORCHELASTIC_RUN_ID") == "job-7");
  CHECK(env.at("DLAUNCH_JOB") == "job-7");
  CHECK(env.at("DLAUNCH_HOST") == "gpu2");
  CHECK(env.at("OMP_NUM_THREADS") == "1");
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "eth1");
  CHECK(env.at("GLOO_SOCKET_IFNAME") == "lo");  // the user's own setting wins
  CHECK(env.at("NCCL_DEBUG") == "INFO");
  CHECK(env.at("PATH") == "/bin");
}

TEST_CASE("OMP_NUM_THREADS is left alone for one rank or when set") {
  proto::Assign a{"j", 0, 0, 0, 1, 0, 1, 1, "a", 1};
  LaunchSpec spec;
  CHECK_FALSE(rank_environment(a, 0, spec, {}).contains("OMP_NUM_THREADS"));
  a.local_world_size = 2;
  a.world_size = 2;
  CHECK(rank_environment(a, 0, spec, {{"OMP_NUM_THREADS", "4"}}).at("OMP_NUM_THREADS") == "4");
}

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
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string bytes = encode_launch_spec(s);
  REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fds[1]);
  std::string error;
  auto back = read_launch_spec(fds[0], &error);
  ::close(fds[0]);
  REQUIRE(back.has_value());
  CHECK(back->secret == s.secret);
  CHECK(back->argv == s.argv);
  CHECK(back->rdzv_port == 40001);
  CHECK(back->env == s.env);
  CHECK(back->echo);
}

TEST_CASE("a truncated or foreign launch spec is refused with a message") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "hello world\n", 12) == 12);
  ::close(fds[1]);
  std::string error;
  CHECK_FALSE(read_launch_spec(fds[0], &error).has_value());
  CHECK(error.find("launch spec") != std::string::npos);
  ::close(fds[0]);
}
