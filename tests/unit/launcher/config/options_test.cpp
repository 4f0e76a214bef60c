#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "launcher/config/options.h"
#include "tests/unit/scoped_env.h"

using namespace dlaunch;

namespace {
ParsedOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dlaunch");
  return parse_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("everything after -- is the program, untouched") {
  auto r = parse({"--nproc-per-node", "4", "--", "prog", "--nproc-per-node", "--", "x y"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::standalone);
  CHECK(r->nproc_per_node == 4);
  CHECK(r->command == std::vector<std::string>{"prog", "--nproc-per-node", "--", "x y"});
}

TEST_CASE("the program may follow the options without --") {
  auto r = parse({"-n", "2", "prog", "--epochs", "3"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"prog", "--epochs", "3"});
}

TEST_CASE("manual mode flags and the --rank alias") {
  auto r = parse({"--nnodes", "3", "--rank", "2", "--master-addr", "10.0.0.1", "--rdzv-port",
                  "29411", "--", "p"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::manual);
  CHECK(r->node_rank == 2);
  CHECK(r->rdzv_port == 29411);
  CHECK(r->master_addr == "10.0.0.1");
}

TEST_CASE("usage errors exit 2 with a message") {
  auto check_error = [](std::vector<const char*> args, const std::string& needle) {
    auto r = parse(std::move(args));
    CHECK_FALSE(r.ok());
    CHECK(r.error().exit_code == 2);
    CHECK_MESSAGE(r.error().message.find(needle) != std::string::npos, r.error().message);
  };
  check_error({"--nproc-per-node", "4"}, "no program");
  check_error({"--nproc-per-node", "0", "--", "p"}, "--nproc-per-node");
  check_error({"--nproc-per-node", "x", "--", "p"}, "--nproc-per-node");
  check_error({"--nnodes", "2", "--node-rank", "1", "--", "p"}, "--master-addr");
  check_error({"--nnodes", "2", "--node-rank", "2", "--master-addr", "a", "--", "p"},
              "below --nnodes");
  check_error({"--hosts", "/dev/null", "--nnodes", "2", "--master-addr", "a", "--", "p"},
              "cannot be combined");
  check_error({"--ranks-filter", "1,,2", "--", "p"}, "--ranks-filter");
  check_error({"--bogus", "--", "p"}, "bogus");
  check_error({"--", ""}, "the program name is empty");
  check_error({"--rdzv-via-ssh", "--", "p"}, "--rdzv-via-ssh needs --hosts");
}

TEST_CASE("--rdzv-via-ssh with --hosts") {
  auto r = parse({"--hosts", "/dev/null", "--rdzv-via-ssh", "--", "p"});
  REQUIRE(r.ok());
  CHECK(r->rdzv_via_ssh);
  CHECK_FALSE(parse({"--hosts", "/dev/null", "--", "p"})->rdzv_via_ssh);
}

using dlaunch::testing::ScopedEnv;

TEST_CASE("host lists: --hosts, --hostfile, -H and --launcher slurm each give hosts mode") {
  ScopedEnv no_slurm("SLURM_JOB_ID", std::nullopt);
  auto source_of = [](std::vector<const char*> args) {
    auto r = parse(std::move(args));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    CHECK(r->mode == Mode::hosts);
    return r->host_source;
  };
  CHECK(source_of({"--hosts", "/dev/null", "--", "p"}) == HostSource::hosts_file);
  CHECK(source_of({"--hostfile", "/dev/null", "--", "p"}) == HostSource::hostfile);
  CHECK(source_of({"-H", "a:4,b", "--", "p"}) == HostSource::host_list);
  CHECK(source_of({"--host-list", "a:4", "--", "p"}) == HostSource::host_list);
  CHECK(source_of({"--launcher", "slurm", "--", "p"}) == HostSource::slurm);
  CHECK(source_of({"--launcher", "SLURM", "--master-addr", "10.0.0.1", "--", "p"}) ==
        HostSource::slurm);
  auto r = parse({"-H", "a:1,b:2", "--include", "a", "--", "p"});
  REQUIRE(r.ok());
  CHECK(r->host_list == "a:1,b:2");
  CHECK(r->include == "a");
  CHECK(parse({"-H", "a", "--exclude", "a:1", "--", "p"})->exclude == "a:1");
  CHECK(parse({"--", "p"})->mode == Mode::standalone);
  CHECK(parse({"--launcher", "local", "--", "p"})->launcher == Launcher::local);
}

TEST_CASE("host lists: inside a Slurm job the nodes come from Slurm unless told otherwise") {
  ScopedEnv slurm("SLURM_JOB_ID", "42");
  auto r = parse({"-n", "2", "--", "p"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::hosts);
  CHECK(r->host_source == HostSource::slurm);
  CHECK(r->launcher == Launcher::automatic);
  // A host list, manual flags or another launcher win.
  CHECK(parse({"-H", "a", "--", "p"})->host_source == HostSource::host_list);
  CHECK(parse({"--nnodes", "2", "--master-addr", "a", "--", "p"})->mode == Mode::manual);
  CHECK(parse({"--master-addr", "a", "--", "p"})->mode == Mode::manual);
  CHECK(parse({"--launcher", "local", "--", "p"})->mode == Mode::standalone);
  CHECK(parse({"--include", "n1", "--", "p"})->include == "n1");
}

TEST_CASE("host lists: usage errors") {
  ScopedEnv no_slurm("SLURM_JOB_ID", std::nullopt);
  auto check_error = [](std::vector<const char*> args, const std::string& needle) {
    auto r = parse(std::move(args));
    CHECK_FALSE(r.ok());
    CHECK(r.error().exit_code == 2);
    CHECK_MESSAGE(r.error().message.find(needle) != std::string::npos, r.error().message);
  };
  check_error({"--hosts", "/dev/null", "--hostfile", "/dev/null", "--", "p"},
              "--hosts and --hostfile both name the hosts");
  check_error({"--hostfile", "/dev/null", "-H", "a", "--", "p"}, "--hostfile and -H both");
  check_error({"-H", "a", "--launcher", "slurm", "--", "p"}, "-H and --launcher slurm both");
  check_error({"-H", "a", "--launcher", "local", "--", "p"}, "--launcher local runs on this");
  check_error({"--launcher", "ssh", "--", "p"}, "--launcher ssh needs the hosts");
  check_error({"--launcher", "srun", "--", "p"}, "--launcher");
  check_error({"--hostfile", "/nonexistent/hostfile", "--", "p"}, "--hostfile");
  check_error({"--include", "a", "--", "p"}, "--include picks from a host list");
  check_error({"--exclude", "a", "--", "p"}, "--exclude picks from a host list");
  check_error({"-H", "a", "--include", "a", "--exclude", "b", "--", "p"}, "cannot be combined");
  check_error({"-H", "a", "--nnodes", "2", "--master-addr", "x", "--", "p"},
              "-H cannot be combined with --nnodes");
  check_error({"--launcher", "slurm", "--node-rank", "1", "--", "p"},
              "--launcher slurm cannot be combined");
  check_error({"--accept-new-host-keys", "--", "p"}, "--hostfile, -H or a Slurm job");
}

TEST_CASE("rank lists") {
  CHECK(parse_rank_list("0,3") == std::set<int>{0, 3});
  CHECK(parse_rank_list("2-4,7") == std::set<int>{2, 3, 4, 7});
  CHECK_FALSE(parse_rank_list("a").has_value());
  CHECK_FALSE(parse_rank_list("3-1").has_value());
  CHECK_FALSE(parse_rank_list("-1").has_value());
}

TEST_CASE("--sync defaults --workdir to ~/<the directory's name> and keeps an explicit one") {
  const auto dir = std::filesystem::temp_directory_path() / "dlaunch-options-sync-src";
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  auto r = parse({"--sync", d.c_str(), "--", "prog"});
  REQUIRE(r.ok());
  CHECK(r->sync_dir == d);
  CHECK(r->workdir == "~/dlaunch-options-sync-src");
  CHECK_FALSE(r->sync_delete);
  const std::string slash = d + "/";
  r = parse({"--sync", slash.c_str(), "--sync-delete", "--workdir", "/data/run", "--", "prog"});
  REQUIRE(r.ok());
  CHECK(r->workdir == "/data/run");
  CHECK(r->sync_delete);
  CHECK(sync_dir_name(slash) == "dlaunch-options-sync-src");
  CHECK(sync_dir_name("/").empty());
  r = parse({"--sync-delete", "--", "prog"});
  CHECK(r.error().exit_code == 2);
  r = parse({"--sync", "/nonexistent/dlaunch-sync", "--", "prog"});
  CHECK(r.error().exit_code == 2);
  r = parse({"--sync", d.c_str(), "--nnodes", "2", "--node-rank", "0", "--master-addr", "10.0.0.1",
             "--", "prog"});
  CHECK(r.error().exit_code == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("elastic: --nnodes MIN:MAX and --spares take a host list; bad ranges are named") {
  ScopedEnv no_slurm("SLURM_JOB_ID", std::nullopt);
  auto r = parse({"-H", "a,b,c", "--nnodes", "2:3", "--spares", "1", "--node-fail-limit", "3",
                  "--join-timeout", "5", "--", "p"});
  REQUIRE(r.ok());
  CHECK(r->mode == Mode::hosts);
  CHECK(r->min_nodes == 2);
  CHECK(r->max_nodes == 3);
  CHECK(r->spares == 1);
  CHECK(r->node_fail_limit == 3);
  CHECK(r->join_timeout_s == 5);
  auto check_error = [](std::vector<const char*> args, const std::string& needle) {
    auto bad = parse(std::move(args));
    CHECK_FALSE(bad.ok());
    CHECK(bad.error().exit_code == 2);
    CHECK_MESSAGE(bad.error().message.find(needle) != std::string::npos, bad.error().message);
  };
  check_error({"-H", "a,b", "--nnodes", "3:2", "--", "p"}, "--nnodes 3:2: MIN is above MAX");
  check_error({"-H", "a,b", "--nnodes", "0:2", "--", "p"}, "--nnodes 0:2: expected MIN:MAX");
  check_error({"-H", "a,b", "--nnodes", "2:x", "--", "p"}, "--nnodes 2:x: expected MIN:MAX");
  check_error({"--nnodes", "1:2", "--", "p"}, "a range of nodes needs a host list");
  check_error({"--spares", "1", "--", "p"}, "--spares needs a host list");
  // Manual mode, torchrun's way: MAX places on node 0.
  auto manual =
      parse({"--nnodes", "2:4", "--node-rank", "3", "--master-addr", "10.0.0.1", "--", "p"});
  REQUIRE(manual.ok());
  CHECK(manual->mode == Mode::manual);
  CHECK(manual->nnodes == 4);
  CHECK(manual->min_nodes == 2);
  CHECK(manual->node_rank == 3);
  check_error({"--nnodes", "2:4", "--node-rank", "4", "--master-addr", "a", "--", "p"},
              "--node-rank 4 must be below --nnodes 4");
  check_error({"--nnodes", "2:4", "--node-rank", "1", "--", "p"},
              "--master-addr is required with --nnodes 2:4");
}

TEST_CASE("a .py program and -m run with Python, as torchrun runs them") {
  ScopedEnv no_python_env("DLAUNCH_PYTHON", std::nullopt);
  auto r = parse({"--nproc-per-node", "2", "train.py", "--lr", "3e-4"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"python3", "-u", "train.py", "--lr", "3e-4"});
  r = parse({"-m", "json.tool", "in.json"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"python3", "-u", "-m", "json.tool", "in.json"});
  r = parse({"--no-python", "--", "./train.py"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"./train.py"});
  {
    ScopedEnv venv("DLAUNCH_PYTHON", "/opt/venv/bin/python");
    r = parse({"--", "train.py"});
    REQUIRE(r.ok());
    CHECK(r->command.front() == "/opt/venv/bin/python");
  }
  r = parse({"-m", "--no-python", "x"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().exit_code == 2);
}

TEST_CASE("an unknown option is named, with a suggestion, never taken for the program") {
  auto r = parse({"--standalon", "--nproc-per-node", "2", "train.py"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().exit_code == 2);
  CHECK(
      r.error().message.starts_with("unknown option '--standalon'; did you mean '--standalone'?"));
  r = parse({"--nprocs", "2", "--", "true"});
  CHECK_FALSE(r.ok());
  CHECK(
      r.error().message.starts_with("unknown option '--nprocs'; did you mean '--nproc-per-node'?"));
  r = parse({"--nproc-per-nod=2", "prog"});
  CHECK_FALSE(r.ok());
  CHECK(r.error().message.starts_with(
      "unknown option '--nproc-per-nod'; did you mean '--nproc-per-node'?"));
  // The program's own options stay the program's.
  r = parse({"-n", "2", "prog", "--nprocs", "3"});
  REQUIRE(r.ok());
  CHECK(r->command == std::vector<std::string>{"prog", "--nprocs", "3"});
}

TEST_CASE("-e and --forward-env take one value each time: the program after them stays") {
  auto r = parse({"-e", "A=1", "--forward-env", "X,Y", "prog", "arg"});
  REQUIRE(r.ok());
  CHECK(r->env == std::vector<std::string>{"A=1"});
  CHECK(r->forward_env == std::vector<std::string>{"X", "Y"});
  CHECK(r->command == std::vector<std::string>{"prog", "arg"});
}
