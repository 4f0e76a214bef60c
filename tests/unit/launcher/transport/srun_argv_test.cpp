#include "launcher/transport/srun_argv.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace dlaunch;

TEST_CASE("srun_argv: one agent per planned node, every option its own argv entry") {
  SrunStep step;
  step.nodes = {"n01", "n02", "gpu1x"};
  step.agent_binary = "/opt/dlaunch/lib/dlaunch-agent";
  step.job_name = "mnist_dist-20261122-173000";
  const std::vector<std::string> expected{"srun",
                                          "--nodes=3",
                                          "--ntasks=3",
                                          "--ntasks-per-node=1",
                                          "--nodelist=n01,n02,gpu1x",
                                          "--kill-on-bad-exit=1",
                                          "--wait=0",
                                          "--input=all",
                                          "--label",
                                          "--unbuffered",
                                          "--mpi=none",
                                          "--job-name=mnist_dist-20261122-173000",
                                          "/opt/dlaunch/lib/dlaunch-agent",
                                          "--slurm"};
  CHECK(srun_argv(step) == expected);
}

TEST_CASE("srun_argv: a path with spaces stays one word; no job name, no --job-name") {
  SrunStep step;
  step.srun = "/usr/local/bin/srun";
  step.nodes = {"a"};
  step.agent_binary = "/home/me/my build/dlaunch-agent";
  const auto argv = srun_argv(step);
  CHECK(argv.front() == "/usr/local/bin/srun");
  CHECK(argv[argv.size() - 2] == "/home/me/my build/dlaunch-agent");
  CHECK(argv.back() == "--slurm");
  CHECK(std::find(argv.begin(), argv.end(), "--nodes=1") != argv.end());
  CHECK(std::none_of(argv.begin(), argv.end(),
                     [](const std::string& a) { return a.starts_with("--job-name"); }));
}

TEST_CASE("srun_argv: an elastic job's step outlives a lost node's task") {
  SrunStep step;
  step.nodes = {"a", "b", "spare"};
  step.agent_binary = "/opt/dlaunch-agent";
  step.elastic = true;
  const auto argv = srun_argv(step);
  auto has = [&argv](const char* word) {
    return std::find(argv.begin(), argv.end(), word) != argv.end();
  };
  CHECK(has("--kill-on-bad-exit=0"));
  CHECK_FALSE(has("--kill-on-bad-exit=1"));
  CHECK(has("--no-kill"));
  CHECK(has("--nodelist=a,b,spare"));  // the spares' agents are in the step from the start
}

TEST_CASE("srun_nodelist joins names with commas") {
  CHECK(srun_nodelist({}) == "");
  CHECK(srun_nodelist({"x"}) == "x");
  CHECK(srun_nodelist({"r1n01", "r1n02"}) == "r1n01,r1n02");
}
