#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "protocol/rank_env.h"

using namespace dlaunch;

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
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "=eth1");  // exact match: not eth10 too
  CHECK(env.at("GLOO_SOCKET_IFNAME") == "lo");     // the user's own setting wins
  CHECK(env.at("NCCL_DEBUG") == "INFO");
  CHECK(env.at("PATH") == "/bin");
}

TEST_CASE(
    "--checkpoint-dir reaches the ranks as DLAUNCH_CHECKPOINT_DIR, absolute under the workdir") {
  proto::Assign a{"j", 0, 0, 0, 1, 0, 1, 1, "a", 1};
  LaunchSpec spec;
  CHECK_FALSE(rank_environment(a, 0, spec, {}).contains("DLAUNCH_CHECKPOINT_DIR"));
  spec.checkpoint_dir = "ckpt";
  CHECK(rank_environment(a, 0, spec, {}).at("DLAUNCH_CHECKPOINT_DIR") == "ckpt");
  spec.workdir = "/home/u/run";
  CHECK(rank_environment(a, 0, spec, {}).at("DLAUNCH_CHECKPOINT_DIR") == "/home/u/run/ckpt");
  spec.checkpoint_dir = "/scratch/ckpt";
  CHECK(rank_environment(a, 0, spec, {}).at("DLAUNCH_CHECKPOINT_DIR") == "/scratch/ckpt");
}

TEST_CASE("OMP_NUM_THREADS is left alone for one rank or when set") {
  proto::Assign a{"j", 0, 0, 0, 1, 0, 1, 1, "a", 1};
  LaunchSpec spec;
  CHECK_FALSE(rank_environment(a, 0, spec, {}).contains("OMP_NUM_THREADS"));
  a.local_world_size = 2;
  a.world_size = 2;
  CHECK(rank_environment(a, 0, spec, {{"OMP_NUM_THREADS", "4"}}).at("OMP_NUM_THREADS") == "4");
}

TEST_CASE("the launcher's variables are exactly the ones every rank gets") {
  proto::Assign a;
  a.world_size = 1;
  a.local_world_size = 1;
  LaunchSpec spec;
  const EnvMap env = rank_environment(a, 0, spec, {});
  // torchrun's documented variables (torch.distributed.run: "Environment
  // Variables"), the two it sets unless the user did, deepspeed's launcher's
  // three (CROSS_RANK, CROSS_SIZE, LOCAL_SIZE), and dlaunch's own two
  // (docs/environment.md): written here, not read from the product's list.
  const std::set<std::string> expected = {"RANK",
                                          "LOCAL_RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_WORLD_SIZE",
                                          "GROUP_RANK",
                                          "GROUP_WORLD_SIZE",
                                          "CROSS_RANK",
                                          "CROSS_SIZE",
                                          "LOCAL_SIZE",
                                          "ROLE_RANK",
                                          "ROLE_WORLD_SIZE",
                                          "ROLE_NAME",
                                          "MASTER_ADDR",
                                          "MASTER_PORT",
                                          "TORCHELASTIC_RESTART_COUNT",
                                          "TORCHELASTIC_MAX_RESTARTS",
                                          "TORCHELASTIC_RUN_ID",
                                          "TORCHELASTIC_USE_AGENT_STORE",
                                          "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                          "DLAUNCH_JOB",
                                          "DLAUNCH_HOST"};
  std::set<std::string> got;
  for (const auto& [k, v] : env) got.insert(k);
  CHECK(got == expected);
  // The product's list of what a hosts file may not set is the same set,
  // less the ones a user may change (ROLE_NAME and the two defaults).
  for (const auto& name : expected)
    CHECK(is_launcher_variable(name) ==
          (name != "ROLE_NAME" && name != "TORCHELASTIC_USE_AGENT_STORE" &&
           name != "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
  // torchrun's: set unless the user did.
  CHECK(env.at("TORCHELASTIC_USE_AGENT_STORE") == "False");
  CHECK(env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(rank_environment(a, 0, spec, {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}})
            .at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "0");
  CHECK_FALSE(is_launcher_variable("NCCL_DEBUG"));
  // ROLE_NAME is "default" unless the launch names a role (torchrun's --role).
  CHECK(env.at("ROLE_NAME") == "default");
  spec.env["ROLE_NAME"] = "trainer";
  CHECK(rank_environment(a, 0, spec, {{"ROLE_NAME", "shell"}}).at("ROLE_NAME") == "trainer");
  CHECK(rank_environment(a, 0, {}, {{"ROLE_NAME", "shell"}}).at("ROLE_NAME") == "default");
}

TEST_CASE("an interface the user set for NCCL or Gloo that differs from dlaunch's is said") {
  CHECK(socket_ifname_override({{"NCCL_SOCKET_IFNAME", "=ens5"}}, "ens5").empty());
  CHECK(socket_ifname_override({{"GLOO_SOCKET_IFNAME", "ens5"}}, "ens5").empty());
  CHECK(socket_ifname_override({{"NCCL_SOCKET_IFNAME", "eth0"}}, "").empty());
  const std::string both = socket_ifname_override(
      {{"NCCL_SOCKET_IFNAME", "eth0"}, {"GLOO_SOCKET_IFNAME", "eth0"}}, "ens5");
  CHECK(
      both.starts_with("NCCL_SOCKET_IFNAME=eth0, GLOO_SOCKET_IFNAME=eth0 (set for the ranks by "
                       "you"));
  CHECK(both.find("differs from ens5") != std::string::npos);
  CHECK(both.find("the ranks get yours") != std::string::npos);
}
