#include "agent/container_command.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace dlaunch;

namespace {

using Env = std::map<std::string, std::string>;
using Args = std::vector<std::string>;

ContainerRank rank_of(ContainerEngine engine, std::string executable) {
  ContainerRank r;
  r.engine = engine;
  r.executable = std::move(executable);
  r.image = "localhost/train:1";
  r.job = "mnist 7";
  r.agent_token = "a1b2";
  r.round = 1;
  r.rank = 3;
  r.workdir = "/home/u/job";
  r.mounts = {"/data/imagenet:/data:ro", "/scratch:/scratch"};
  r.uid = 1000;
  r.gid = 1000;
  r.argv = {"python3", "-u", "train.py", "--lr", "0.1"};
  return r;
}

const Env kRankEnv = {{"RANK", "3"}, {"HF_TOKEN", "secret-value"}, {"PATH", "/usr/bin"}};
const Args kNames = {"HF_TOKEN", "RANK"};

bool has(const Args& args, const std::string& item) {
  return std::find(args.begin(), args.end(), item) != args.end();
}

// The image, then exactly the rank's argv: nothing of dlaunch's follows it.
void ends_with_image_then(const Args& args, const std::string& image, const Args& tail) {
  REQUIRE(args.size() > tail.size());
  CHECK(args[args.size() - tail.size() - 1] == image);
  CHECK(Args(args.end() - static_cast<std::ptrdiff_t>(tail.size()), args.end()) == tail);
}

// No value of the rank's environment is on the command line.
void no_values_on_the_command_line(const Args& args) {
  for (const auto& a : args) CHECK(a.find("secret-value") == std::string::npos);
}

}  // namespace

TEST_CASE("podman: host network and IPC, CDI GPUs, the user kept, labels, env by name only") {
  auto r = rank_of(ContainerEngine::podman, "/usr/bin/podman");
  r.gpus = true;
  const auto c = container_command(r, kRankEnv, kNames);
  const Args head = {"/usr/bin/podman",
                     "--log-level=fatal",
                     "run",
                     "--rm",
                     "--init",
                     "--name",
                     "dlaunch-mnist-7-r1-3",
                     "--label",
                     "dlaunch.job=mnist 7",
                     "--label",
                     "dlaunch.agent=a1b2",
                     "--network=host",
                     "--pids-limit=-1",
                     "--pull=never",
                     "--ipc=host",
                     "--userns=keep-id",
                     "--device=nvidia.com/gpu=all",
                     "--volume=/home/u/job:/home/u/job",
                     "--volume=/data/imagenet:/data:ro",
                     "--volume=/scratch:/scratch",
                     "--workdir=/home/u/job",
                     "--env=HF_TOKEN",
                     "--env=RANK",
                     "localhost/train:1"};
  CHECK(Args(c.argv.begin(), c.argv.begin() + static_cast<std::ptrdiff_t>(head.size())) == head);
  ends_with_image_then(c.argv, "localhost/train:1", r.argv);
  no_values_on_the_command_line(c.argv);
  CHECK(c.env == kRankEnv);  // podman reads --env NAME's value from its own environment
}

TEST_CASE("podman as root runs the ranks as root's ids; no GPUs, no device") {
  auto r = rank_of(ContainerEngine::podman, "podman");
  r.uid = 0;
  r.gid = 0;
  const auto c = container_command(r, kRankEnv, kNames);
  CHECK(has(c.argv, "--user=0:0"));
  CHECK_FALSE(has(c.argv, "--userns=keep-id"));
  CHECK_FALSE(has(c.argv, "--device=nvidia.com/gpu=all"));
}

TEST_CASE("docker: --gpus, --user, and --shm-size in place of the host's IPC") {
  auto r = rank_of(ContainerEngine::docker, "/usr/bin/docker");
  r.gpus = true;
  r.shm_size = "16g";
  const auto c = container_command(r, kRankEnv, kNames);
  CHECK(c.argv[0] == "/usr/bin/docker");
  CHECK(c.argv[1] == "run");
  CHECK(has(c.argv, "--gpus=all"));
  CHECK(has(c.argv, "--user=1000:1000"));
  CHECK(has(c.argv, "--shm-size=16g"));
  CHECK_FALSE(has(c.argv, "--ipc=host"));
  CHECK(has(c.argv, "--network=host"));
  CHECK(has(c.argv, "--env=HF_TOKEN"));
  CHECK(has(c.argv, "--label"));
  CHECK(has(c.argv, "dlaunch.agent=a1b2"));
  CHECK(has(c.argv, "--volume=/data/imagenet:/data:ro"));
  ends_with_image_then(c.argv, "localhost/train:1", r.argv);
  no_values_on_the_command_line(c.argv);
}

TEST_CASE("apptainer: --nv, --bind, --pwd, a clean environment and APPTAINERENV_ values") {
  auto r = rank_of(ContainerEngine::apptainer, "/usr/bin/apptainer");
  r.image = "/images/train.sif";
  r.gpus = true;
  const auto c = container_command(r, kRankEnv, kNames);
  const Args expected = {"/usr/bin/apptainer",
                         "exec",
                         "--cleanenv",
                         "--nv",
                         "--bind=/home/u/job:/home/u/job",
                         "--bind=/data/imagenet:/data:ro",
                         "--bind=/scratch:/scratch",
                         "--pwd=/home/u/job",
                         "/images/train.sif",
                         "python3",
                         "-u",
                         "train.py",
                         "--lr",
                         "0.1"};
  CHECK(c.argv == expected);
  CHECK(c.env.at("APPTAINERENV_HF_TOKEN") == "secret-value");
  CHECK(c.env.at("APPTAINERENV_RANK") == "3");
  CHECK_FALSE(c.env.contains("APPTAINERENV_PATH"));  // the host's PATH stays outside

  r.executable = "/usr/local/bin/singularity";
  const auto s = container_command(r, kRankEnv, kNames);
  CHECK(s.env.at("SINGULARITYENV_RANK") == "3");
}

TEST_CASE(
    "enroot: fstab mounts, --env by name, NVIDIA's variables, a shell that changes directory") {
  auto r = rank_of(ContainerEngine::enroot, "/usr/bin/enroot");
  r.image = "/images/train.sqsh";
  r.gpus = true;
  const auto c = container_command(r, kRankEnv, kNames);
  const Args expected = {"/usr/bin/enroot",
                         "start",
                         "--rw",
                         "--mount=/home/u/job /home/u/job none x-create=dir,bind",
                         "--mount=/data/imagenet /data none x-create=dir,bind,ro",
                         "--mount=/scratch /scratch none x-create=dir,bind",
                         "--env=HF_TOKEN",
                         "--env=RANK",
                         "--env=NVIDIA_VISIBLE_DEVICES",
                         "--env=NVIDIA_DRIVER_CAPABILITIES",
                         "/images/train.sqsh",
                         "/bin/sh",
                         "-c",
                         "cd \"$1\" && shift && exec \"$@\"",
                         "dlaunch-rank",
                         "/home/u/job",
                         "python3",
                         "-u",
                         "train.py",
                         "--lr",
                         "0.1"};
  CHECK(c.argv == expected);
  CHECK(c.env.at("NVIDIA_VISIBLE_DEVICES") == "all");
  no_values_on_the_command_line(c.argv);
}

TEST_CASE("the variables a container gets: the rank's own and the job's, not the host's") {
  const Env inherited = {{"PATH", "/usr/bin"},
                         {"HOME", "/root"},
                         {"NCCL_DEBUG", "INFO"},
                         {"OMP_NUM_THREADS", "4"},
                         {"CUDA_VISIBLE_DEVICES", "2,3"}};
  Env rank = inherited;
  rank["OMP_NUM_THREADS"] = "1";
  rank["RANK"] = "0";
  rank["MASTER_ADDR"] = "10.0.0.1";
  rank["NCCL_SOCKET_IFNAME"] = "ib0";
  const Env job = {{"NCCL_DEBUG", "INFO"}};  // forwarded, equal to the host's: still passed
  // The host's GPU limit goes in although the rank did not change it.
  CHECK(container_variables(rank, inherited, job) == Args{"CUDA_VISIBLE_DEVICES", "MASTER_ADDR",
                                                          "NCCL_DEBUG", "NCCL_SOCKET_IFNAME",
                                                          "OMP_NUM_THREADS", "RANK"});
}

TEST_CASE("container names are unique per job, round and rank, in the engines' alphabet") {
  auto r = rank_of(ContainerEngine::docker, "docker");
  r.job = "exp/1 ü";
  r.round = 2;
  r.rank = 15;
  CHECK(container_name(r) == "dlaunch-exp-1----r2-15");  // ü is two bytes
}

TEST_CASE("sweeping, presence and pulls: podman and docker only") {
  CHECK(list_containers_command(ContainerEngine::podman, "podman", kAgentLabel, "t") ==
        Args{"podman", "ps", "--all", "--quiet", "--no-trunc", "--filter=label=dlaunch.agent=t"});
  CHECK(remove_containers_command(ContainerEngine::docker, "docker", {"a", "b"}) ==
        Args{"docker", "rm", "--force", "a", "b"});
  // The grace is over when containers are removed: no 10 s more of podman's.
  CHECK(remove_containers_command(ContainerEngine::podman, "podman", {"a"}) ==
        Args{"podman", "rm", "--force", "--time=0", "a"});
  CHECK(remove_containers_command(ContainerEngine::docker, "docker", {}).empty());
  CHECK(list_containers_command(ContainerEngine::apptainer, "apptainer", kAgentLabel, "t").empty());
  CHECK(image_present_command(ContainerEngine::podman, "podman", "i") ==
        Args{"podman", "image", "exists", "i"});
  CHECK(pull_image_command(ContainerEngine::docker, "docker", "i") ==
        Args{"docker", "pull", "--quiet", "i"});
  CHECK(pull_image_command(ContainerEngine::enroot, "enroot", "i").empty());
  CHECK(load_image_command(ContainerEngine::podman, "/usr/bin/podman", "/c/x.tar") ==
        Args{"/usr/bin/podman", "load", "--input", "/c/x.tar"});
  CHECK(load_image_command(ContainerEngine::docker, "docker", "/c/x.tar") ==
        Args{"docker", "load", "--input", "/c/x.tar"});
  CHECK(load_image_command(ContainerEngine::apptainer, "apptainer", "/c/x.sif").empty());
}

TEST_CASE("engine names") {
  CHECK(parse_container_engine("singularity") == ContainerEngine::apptainer);
  CHECK(parse_container_engine("podman") == ContainerEngine::podman);
  CHECK_FALSE(parse_container_engine("lxc").has_value());
  CHECK(container_engine_name(ContainerEngine::enroot) == "enroot");
  CHECK(engine_candidates().front().executable == "podman");
}

TEST_CASE("an agent's token names its reaper; labels are read as podman and docker print them") {
  const auto token = agent_token(4242, 987654, "a1b2c3");
  CHECK(token == "4242-987654-a1b2c3");
  const auto reaper = reaper_of(token);
  REQUIRE(reaper.has_value());
  CHECK(reaper->pid == 4242);
  CHECK(reaper->start_ticks == 987654);
  CHECK_FALSE(reaper_of("a1b2c3").has_value());  // an in-process agent's: no reaper
  CHECK_FALSE(reaper_of("x-1-ab").has_value());
  CHECK_FALSE(reaper_of("0-1-ab").has_value());
  CHECK(label_value("map[dlaunch.agent:4242-9-ab dlaunch.job:mnist]", kAgentLabel) == "4242-9-ab");
  CHECK(label_value("dlaunch.job=mnist,dlaunch.agent=4242-9-ab", kAgentLabel) == "4242-9-ab");
  CHECK(label_value("map[x.dlaunch.agent:1-2-3 dlaunch.job:j]", kAgentLabel).empty());
  CHECK(label_value("map[dlaunch.job:j]", kAgentLabel).empty());
  CHECK(list_labelled_containers_command(ContainerEngine::podman, "podman") ==
        Args{"podman", "ps", "--all", "--no-trunc", "--filter=label=dlaunch.agent",
             "--format={{.ID}} {{.Labels}}"});
}
