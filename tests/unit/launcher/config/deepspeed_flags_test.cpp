#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/config/environment.h"
#include "launcher/config/host_source.h"
#include "launcher/config/options.h"

using namespace dlaunch;

namespace {
ParsedOptions deepspeed_parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dlaunch");
  return parse_options(static_cast<int>(args.size()), args.data());
}

bool has_deepspeed_note(const Options& o, const std::string& start) {
  for (const auto& n : o.notes)
    if (n.starts_with(start)) return true;
  return false;
}

HostsFile three_hosts() {
  HostsFile h;
  h.path = "hostfile";
  for (const char* name : {"w0", "w1", "localhost"}) {
    HostEntry e;
    e.name = name;
    e.address = name;
    e.slots = 8;
    h.hosts.push_back(e);
  }
  h.hosts[1].port = 2222;
  return h;
}
}  // namespace

TEST_CASE("deepspeed's own flags pass --local_rank; --no_local_rank does not") {
  auto r = deepspeed_parse({"-H", "w0,w1", "--num_gpus", "2", "--num_nodes=1", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->num_gpus == 2);
  CHECK(r->num_nodes == 1);
  CHECK(r->pass_local_rank);
  CHECK(has_deepspeed_note(*r, "deepspeed's command line: each rank gets --local_rank=N"));
  // One machine: --num_gpus N is N ranks, as deepspeed runs N processes.
  r = deepspeed_parse({"--num_gpus", "2", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->nproc_per_node == 2);
  r = deepspeed_parse({"-H", "w0", "--num_gpus", "2", "--no_local_rank", "train.py"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->pass_local_rank);
  r = deepspeed_parse({"-n", "2", "--pass-local-rank", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->pass_local_rank);
  r = deepspeed_parse({"-n", "2", "train.py"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->pass_local_rank);
  // No flag of deepspeed's, but a host selection and a program set up for
  // deepspeed: its line all the same.
  r = deepspeed_parse({"-H", "w0,w1", "--include", "w0", "train.py", "--deepspeed_config=ds.json"});
  REQUIRE(r.ok());
  CHECK(r->pass_local_rank);
  CHECK(r->deepspeed_line);
  r = deepspeed_parse({"-n", "2", "train.py", "--deepspeed", "ds.json"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->pass_local_rank);  // no hosts chosen as deepspeed does
}

TEST_CASE("deepspeed's .deepspeed_env: home, then the current directory; $DS_ENV_FILE renames") {
  CHECK(deepspeed_env_paths(nullptr, "/home/u", "/work") ==
        std::vector<std::string>{"/home/u/.deepspeed_env", "/work/.deepspeed_env"});
  CHECK(deepspeed_env_paths("", "/home/u", "/home/u") ==
        std::vector<std::string>{"/home/u/.deepspeed_env"});
  CHECK(deepspeed_env_paths("my.env", "/home/u", "/work") ==
        std::vector<std::string>{"/home/u/my.env", "/work/my.env"});
  CHECK(deepspeed_env_paths("/etc/ds.env", "/home/u", "/work") ==
        std::vector<std::string>{"/etc/ds.env"});
}

TEST_CASE("deepspeed's launchers are SSH; -i and -e SPEC are include and exclude") {
  auto r = deepspeed_parse({"--launcher", "PDSH", "-H", "w0,w1", "-e", "w1", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->launcher == Launcher::ssh);
  CHECK(r->pass_local_rank);
  CHECK(r->exclude == "w1");
  CHECK(r->env.empty());
  CHECK(has_deepspeed_note(*r, "deepspeed's --launcher pdsh"));
  CHECK(has_deepspeed_note(*r, "-e w1 has no '=': read as --exclude"));
  r = deepspeed_parse({"-H", "w0,w1", "-i", "w0:0,1", "-e", "A=1", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->include == "w0:0,1");
  CHECK(r->env == std::vector<std::string>{"A=1"});
  // Without a host list there is nothing to exclude: -e stays --env, whose
  // check says it wants KEY=VALUE.
  r = deepspeed_parse({"-n", "2", "-e", "NOEQ", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->exclude.empty());
  CHECK(r->env == std::vector<std::string>{"NOEQ"});
  CHECK(parse_env_assignments(r->env).error().front().to_string() ==
        "-e/--env: expected KEY=VALUE, got 'NOEQ'");
}

TEST_CASE("deepspeed's elastic flags make a MIN:MAX job; --autotuning is refused") {
  auto r = deepspeed_parse({"-H", "a,b,c", "--elastic_training", "--min_elastic_nodes", "2",
                            "--max_elastic_nodes", "3", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->min_nodes == 2);
  CHECK(r->max_nodes == 3);
  r = deepspeed_parse({"-H", "a,b", "--min_elastic_nodes", "2", "train.py"});
  CHECK_FALSE(r.ok());
  r = deepspeed_parse({"--autotuning", "run", "train.py"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message.starts_with("deepspeed's --autotuning run runs deepspeed's own tuner"));
  r = deepspeed_parse({"-H", "a", "--force_multi", "--save_pid", "train.py"});
  REQUIRE(r.ok());
  CHECK(has_deepspeed_note(*r, "deepspeed's --force_multi has no effect"));
}

TEST_CASE("--num_nodes, --num_gpus and --ssh_port shape the host list") {
  Options o;
  o.num_nodes = 2;
  o.num_gpus = 4;
  o.ssh_port = 2200;
  auto result = apply_deepspeed_counts(three_hosts(), o);
  REQUIRE(result.ok());
  const auto* hosts = &*result;
  REQUIRE(hosts->hosts.size() == 2);
  CHECK(hosts->hosts[0].slots == 4);
  CHECK(hosts->hosts[0].port == 2200);
  CHECK(hosts->hosts[1].port == 2222);  // a host's own port stays
  o.num_nodes = 0;
  result = apply_deepspeed_counts(three_hosts(), o);
  CHECK_FALSE(result->hosts[2].port.has_value());  // loopback: no SSH
  o.num_nodes = 4;
  result = apply_deepspeed_counts(three_hosts(), o);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().front().to_string() ==
        "--num_nodes: 4 nodes asked for, but hostfile gives 3");
}
