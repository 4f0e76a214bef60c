#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/config/options.h"
#include "launcher/config/torchrun_flags.h"
#include "tests/unit/scoped_env.h"

using namespace dlaunch;

namespace {
ParsedOptions torchrun_parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dlaunch");
  return parse_options(static_cast<int>(args.size()), args.data());
}

bool has_torchrun_note(const Options& o, const std::string& start) {
  for (const auto& n : o.notes)
    if (n.starts_with(start)) return true;
  return false;
}
}  // namespace

TEST_CASE("torchrun's single-node lines run on this machine") {
  auto r = torchrun_parse({"--standalone", "--nproc_per_node=2", "train.py", "--lr", "3e-4"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::standalone);
  CHECK(r->nproc_per_node == 2);
  CHECK(r->command == std::vector<std::string>{"python3", "-u", "train.py", "--lr", "3e-4"});
  // One node with an endpoint (torchrun's localhost:0 habit) needs none.
  r = torchrun_parse({"--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=localhost:0",
                      "--nproc-per-node", "2", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::standalone);
  r = torchrun_parse({"--standalone", "--nnodes", "2", "train.py"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message == "--standalone runs on this machine only: drop --nnodes");
  r = torchrun_parse({"--standalone", "-H", "a,b", "train.py"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message == "--standalone runs on this machine only: drop the host list");
}

TEST_CASE("--rdzv-endpoint names node 0 of a manual-mode job") {
  auto r = torchrun_parse({"--nnodes=2", "--nproc_per_node=8", "--rdzv_backend=c10d",
                           "--rdzv_endpoint=10.0.0.5:29411", "--rdzv-id", "run 42", "train.py"});
  REQUIRE(r.ok());
  const auto& o = *r;
  CHECK(o.mode == Mode::manual);
  CHECK(o.master_addr == "10.0.0.5");
  CHECK(o.rdzv_port == 29411);
  CHECK_FALSE(o.node_rank_given);  // decided by whether this machine holds 10.0.0.5
  CHECK(o.name == "run-42");
  // No port: torchrun's c10d default, which is dlaunch's too.
  r = torchrun_parse({"--nnodes", "1:4", "--rdzv-endpoint", "[fd00::5]", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->master_addr == "fd00::5");
  CHECK(r->rdzv_port == 29400);
  CHECK(r->nnodes == 4);
  CHECK(r->min_nodes == 1);
  // --node-rank still wins, as with torchrun's static backend.
  r = torchrun_parse({"--nnodes=2", "--node-rank=1", "--rdzv-endpoint=h0:29500", "train.py"});
  REQUIRE(r.ok());
  CHECK(r->node_rank == 1);
  CHECK(r->node_rank_given);
  for (auto bad : {"h0:x", ":29400", "h0:70000", "[fd00::5"}) {
    r = torchrun_parse({"--nnodes=2", "--rdzv-endpoint", bad, "train.py"});
    CHECK_FALSE(r.ok());
    CHECK(r.error().message.find("expected HOST[:PORT]") != std::string::npos);
  }
  r = torchrun_parse({"--nnodes=2", "--rdzv-endpoint=h0:0", "train.py"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message.find("port 0 cannot be agreed on") != std::string::npos);
  r = torchrun_parse({"--nnodes=1:2", "--hostfile", "/dev/null", "--rdzv-endpoint=h0", "train.py"});
  CHECK_FALSE(r.ok());
}

TEST_CASE("--rdzv-backend: dlaunch's rendezvous stands in for c10d and static; etcd is named") {
  for (auto backend : {"c10d", "static", "C10D"}) {
    CHECK(torchrun_parse({"--rdzv-backend", backend, "-n", "1", "prog"}).ok());
  }
  auto r = torchrun_parse({"--rdzv-backend=etcd-v2", "prog"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().exit_code == 2);
  CHECK(r.error().message.find("needs no etcd server") != std::string::npos);
  r = torchrun_parse({"--rdzv-backend=zookeeper", "prog"});
  CHECK(r.error().message.find("expected c10d or static") != std::string::npos);
}

TEST_CASE("--rdzv-conf: timeouts and is_host act; other keys are said") {
  auto r = torchrun_parse({"--nnodes=2", "--rdzv-endpoint=h0", "--rdzv-conf",
                           "timeout=90,last_call_timeout=5,is_host=false,read_timeout=60", "prog"});
  REQUIRE(r.ok());
  CHECK(r->rdzv_timeout_s == 90);
  CHECK(r->join_timeout_s == 5);
  CHECK(r->rdzv_is_host == false);
  CHECK(has_torchrun_note(*r, "torchrun's --rdzv-conf read_timeout has no effect"));
  r = torchrun_parse({"--rdzv-conf", "timeout", "prog"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message == "--rdzv-conf: expected key=value,key=value, got 'timeout'");
  r = torchrun_parse({"--rdzv-conf", "is_host=maybe", "prog"});
  CHECK_FALSE(r.ok());
}

TEST_CASE("torchrun's flags that change nothing are accepted and said once") {
  auto r =
      torchrun_parse({"--monitor-interval", "0.5", "--monitor_interval=1", "--start_method=fork",
                      "--use_env", "--signals-to-handle=SIGUSR1", "-n", "1", "prog"});
  REQUIRE(r.ok());
  const auto& notes = r->notes;
  CHECK(std::count(notes.begin(), notes.end(),
                   "torchrun's --monitor-interval has no effect: dlaunch's agent reacts to exits "
                   "at once") == 1);
  CHECK(has_torchrun_note(*r, "torchrun's --start-method has no effect"));
  CHECK(has_torchrun_note(*r, "torchrun's --use-env has no effect"));
  CHECK(has_torchrun_note(*r, "torchrun's --signals-to-handle has no effect"));
}

TEST_CASE("output flags: -r keeps streams off the terminal, --local-ranks-filter, --role") {
  auto r = torchrun_parse(
      {"-r", "0:1,1:3", "-t", "2", "--local_ranks_filter=0", "--role", "trainer", "prog"});
  REQUIRE(r.ok());
  CHECK(r->hidden_streams == 0);
  // Rank 1's stderr is teed: tee wins over redirects, as in torchrun.
  CHECK(r->hidden_streams_by_local_rank == std::map<int, int>{{0, 1}, {1, 1}});
  CHECK(r->local_ranks_filter == std::set<int>{0});
  CHECK(r->env == std::vector<std::string>{"ROLE_NAME=trainer"});
  r = torchrun_parse({"--redirects", "3", "--tee", "3", "prog"});
  REQUIRE(r.ok());
  CHECK(r->hidden_streams == 0);
  r = torchrun_parse({"--redirects", "3", "--tee", "0:1", "prog"});
  REQUIRE(r.ok());
  CHECK(r->hidden_streams == 3);
  CHECK(r->hidden_streams_by_local_rank == std::map<int, int>{{0, 2}});
  r = torchrun_parse({"--tee", "3", "prog"});
  REQUIRE(r.ok());
  CHECK(has_torchrun_note(*r, "torchrun's -t/--tee has no effect"));
  r = torchrun_parse({"--redirects", "3", "prog"});
  REQUIRE(r.ok());
  CHECK(r->hidden_streams == 3);
  CHECK_FALSE(torchrun_parse({"-r", "4", "prog"}).ok());
  CHECK_FALSE(torchrun_parse({"-r", "0:", "prog"}).ok());
  CHECK_FALSE(torchrun_parse({"--local-ranks-filter", "a", "prog"}).ok());
}

TEST_CASE("torchrun's stream spec") {
  CHECK(parse_stream_spec("2")->all == 2);
  CHECK(parse_stream_spec("0:1,3:2")->by_local_rank == std::map<int, int>{{0, 1}, {3, 2}});
  CHECK_FALSE(parse_stream_spec(""));
  CHECK_FALSE(parse_stream_spec("1:5"));
  CHECK_FALSE(parse_stream_spec("x:1"));
}

TEST_CASE("--run-path runs the program with Python; --nproc-per-node cpu") {
  auto r = torchrun_parse({"--run-path", "--no-python", "/abs/train", "x"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"python3", "-u", "/abs/train", "x"});
  r = torchrun_parse({"--nproc-per-node", "cpu", "prog"});
  REQUIRE(r.ok());
  CHECK(r->nproc_per_node == kNprocCpus);
  // auto is torchrun's rule (one per GPU, else one per CPU); gpu is one per
  // GPU, else 1, as no flag.
  r = torchrun_parse({"--nproc-per-node", "auto", "prog"});
  REQUIRE(r.ok());
  CHECK(r->nproc_per_node == kNprocAuto);
  r = torchrun_parse({"--nproc-per-node", "gpu", "prog"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->nproc_per_node.has_value());
  r = torchrun_parse({"--nproc-per-node", "xpu", "prog"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message.find("dlaunch counts NVIDIA GPUs") != std::string::npos);
}

TEST_CASE("everything after the program is the program's, -- and --help included (torchrun)") {
  auto r = torchrun_parse({"--nproc_per_node=2", "train.py", "--lr", "1", "--", "--z"});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(r->nproc_per_node == 2);
  const auto& c = r->command;
  REQUIRE(c.size() >= 6);
  CHECK(std::vector<std::string>(c.end() - 5, c.end()) ==
        std::vector<std::string>{"train.py", "--lr", "1", "--", "--z"});

  auto help = torchrun_parse({"-n", "2", "train.py", "--help"});
  // The program's help, not dlaunch's.
  REQUIRE_MESSAGE(help.ok(), (help.ok() ? std::string() : help.error().message));
  CHECK(help->command.back() == "--help");
  CHECK(help->nproc_per_node == 2);
}

TEST_CASE("an option given twice takes the last value, as argparse") {
  auto r = torchrun_parse({"-n", "2", "-n", "3", "--name", "a", "--name", "b", "prog"});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(r->nproc_per_node == 3);
  CHECK(r->name == "b");
  // Lists keep every value.
  auto env = torchrun_parse({"-e", "A=1", "-e", "B=2", "prog"});
  REQUIRE_MESSAGE(env.ok(), (env.ok() ? std::string() : env.error().message));
  CHECK(env->env == std::vector<std::string>{"A=1", "B=2"});
}

TEST_CASE("PET_* variables stand for torchrun's flags; the command line wins") {
  dlaunch::testing::ScopedEnv nproc("PET_NPROC_PER_NODE", "2");
  dlaunch::testing::ScopedEnv standalone("PET_STANDALONE", "1");
  dlaunch::testing::ScopedEnv id("PET_RDZV_ID", "kubeflow-job");
  auto r = torchrun_parse({"./train.py"});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(r->nproc_per_node == 2);
  CHECK(r->name == "kubeflow-job");
  auto flag_wins = torchrun_parse({"--nproc_per_node", "3", "./train.py"});
  REQUIRE_MESSAGE(flag_wins.ok(), (flag_wins.ok() ? std::string() : flag_wins.error().message));
  CHECK(flag_wins->nproc_per_node == 3);
}

TEST_CASE("a bad PET_* value is an error that names the variable") {
  dlaunch::testing::ScopedEnv nproc("PET_NPROC_PER_NODE", "abc");
  auto r = torchrun_parse({"./train.py"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().exit_code == 2);
  CHECK_MESSAGE(r.error().message.find("got 'abc' (flags read from the environment: "
                                       "PET_NPROC_PER_NODE=abc)") != std::string::npos,
                r.error().message);
}

TEST_CASE("torchrun as the ranks' program is said: each rank would start its own") {
  auto r = torchrun_parse(
      {"-n", "2", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py"});
  REQUIRE(r.ok());
  CHECK(has_torchrun_note(*r, "the program is torchrun itself: every rank runs its own"));
  r = torchrun_parse({"-n", "2", "--", "/usr/local/bin/deepspeed", "train.py"});
  REQUIRE(r.ok());
  CHECK(has_torchrun_note(*r, "the program is deepspeed itself"));
  // One per host is a way to run torchrun's own agents: nothing to say.
  r = torchrun_parse({"-n", "1", "--", "torchrun", "--nproc-per-node", "8", "train.py"});
  REQUIRE(r.ok());
  CHECK_FALSE(has_torchrun_note(*r, "the program is torchrun itself"));
}
