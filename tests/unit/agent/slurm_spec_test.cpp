#include "agent/slurm_spec.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <vector>

using namespace dlaunch;

namespace {

LaunchSpec spec_for(const std::string& host, int node_rank, int nnodes) {
  LaunchSpec s;
  s.secret = "0123456789abcdef0123456789abcdef";
  s.rdzv_host = "198.18.0.1";
  s.rdzv_port = 40000;
  s.node_rank = node_rank;
  s.host_name = host;
  s.nnodes = nnodes;
  s.argv = {"sh", "-c", "echo $RANK"};
  return s;
}

// A pipe holding `bytes`, its write end closed unless `keep_open`.
struct Pipe {
  int fds[2] = {-1, -1};
  explicit Pipe(const std::string& bytes, bool keep_open = false) {
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    if (!keep_open) {
      ::close(fds[1]);
      fds[1] = -1;
    }
  }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

std::string stream(const std::vector<LaunchSpec>& specs) {
  std::string bytes;
  for (const auto& s : specs) bytes += encode_launch_spec(s);
  return bytes;
}

}  // namespace

TEST_CASE("each node keeps its own spec from the stream of all of them") {
  const std::vector<LaunchSpec> specs{spec_for("n1", 0, 3), spec_for("n2", 1, 3),
                                      spec_for("n3", 2, 3)};
  for (int i = 0; i < 3; ++i) {
    // stdin stays open after the specs, as under srun: the read must not
    // wait for more than it needs.
    Pipe pipe(stream(specs), true);
    auto spec = read_slurm_launch_spec(pipe.fds[0], specs[static_cast<std::size_t>(i)].host_name);
    REQUIRE_MESSAGE(spec, (spec ? "" : spec.error()));
    CHECK(spec->node_rank == i);
    CHECK(spec->host_name == specs[static_cast<std::size_t>(i)].host_name);
    CHECK(spec->argv == specs[0].argv);
  }
}

TEST_CASE("a node missing from the stream is an error naming it and the nodes given") {
  Pipe pipe(stream({spec_for("n1", 0, 2), spec_for("n2", 1, 2)}), true);
  const auto spec = read_slurm_launch_spec(pipe.fds[0], "n9");
  REQUIRE_FALSE(spec);
  CHECK(spec.error().find("'n9'") != std::string::npos);
  CHECK(spec.error().find("among the 2 given (n1, n2)") != std::string::npos);
}

TEST_CASE("a stream cut short or not of launch specs is an error") {
  {
    Pipe pipe(stream({spec_for("n1", 0, 3)}));
    const auto spec = read_slurm_launch_spec(pipe.fds[0], "n3");
    REQUIRE_FALSE(spec);
    CHECK(spec.error().find("after 1 launch specs") != std::string::npos);
  }
  {
    Pipe pipe("hello, world");
    const auto spec = read_slurm_launch_spec(pipe.fds[0], "n1");
    REQUIRE_FALSE(spec);
    CHECK(spec.error().find("does not start with a dlaunch launch spec") != std::string::npos);
  }
}
