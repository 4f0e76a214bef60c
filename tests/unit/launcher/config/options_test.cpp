#include <doctest/doctest.h>

#include "launcher/config/options.h"

using namespace dlaunch;

namespace {
ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dlaunch");
  return parse_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("everything after -- is the program, untouched") {
  auto r = parse({"--nproc-per-node", "4", "--", "prog", "--nproc-per-node", "--", "x y"});
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::standalone);
  CHECK(r.options->nproc_per_node == 4);
  CHECK(r.options->command == std::vector<std::string>{"prog", "--nproc-per-node", "--", "x y"});
}

TEST_CASE("the program may follow the options without --") {
  auto r = parse({"-n", "2", "prog", "--epochs", "3"});
  REQUIRE(r.options);
  CHECK(r.options->command == std::vector<std::string>{"prog", "--epochs", "3"});
}

TEST_CASE("manual mode flags and the --rank alias") {
  auto r = parse({"--nnodes", "3", "--rank", "2", "--master-addr", "10.0.0.1", "--rdzv-port",
                  "29411", "--", "p"});
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::manual);
  CHECK(r.options->node_rank == 2);
  CHECK(r.options->rdzv_port == 29411);
  CHECK(r.options->master_addr == "10.0.0.1");
}

TEST_CASE("usage errors exit 2 with a message") {
  auto check_error = [](std::vector<const char*> args, const std::string& needle) {
    auto r = parse(std::move(args));
    CHECK_FALSE(r.options.has_value());
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.message.find(needle) != std::string::npos, r.message);
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
  REQUIRE(r.options);
  CHECK(r.options->rdzv_via_ssh);
  CHECK_FALSE(parse({"--hosts", "/dev/null", "--", "p"}).options->rdzv_via_ssh);
}

TEST_CASE("rank lists") {
  CHECK(parse_rank_list("0,3") == std::set<int>{0, 3});
  CHECK(parse_rank_list("2-4,7") == std::set<int>{2, 3, 4, 7});
  CHECK_FALSE(parse_rank_list("a").has_value());
  CHECK_FALSE(parse_rank_list("3-1").has_value());
  CHECK_FALSE(parse_rank_list("-1").has_value());
}
