#include <doctest/doctest.h>

#include "launcher/options.h"
#include "launcher/plan.h"
#include "rendezvous/auth.h"

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
}

TEST_CASE("rank lists") {
  CHECK(parse_rank_list("0,3") == std::set<int>{0, 3});
  CHECK(parse_rank_list("2-4,7") == std::set<int>{2, 3, 4, 7});
  CHECK_FALSE(parse_rank_list("a").has_value());
  CHECK_FALSE(parse_rank_list("3-1").has_value());
  CHECK_FALSE(parse_rank_list("-1").has_value());
}

TEST_CASE("plan for hosts: contiguous ranks, local detection, master address") {
  Options o;
  o.mode = Mode::hosts;
  o.command = {"prog"};
  HostsFile hosts;
  HostEntry a;
  a.name = "a";
  a.address = "10.0.0.5";
  a.slots = 2;
  HostEntry b;
  b.name = "b";
  b.address = "10.0.0.6";
  hosts.hosts = {a, b};
  Plan p = make_plan(o, &hosts, "job");
  CHECK(p.nnodes == 2);
  CHECK(p.nodes[0].nproc == 2);
  CHECK(p.nodes[1].nproc == 0);  // auto: decided by the agent
  CHECK_FALSE(p.nodes[0].local);
  CHECK(p.master_addr == "10.0.0.5");
  CHECK(p.rdzv_bind == "0.0.0.0");
  CHECK(p.hosts_in_prefix);
  const std::string text = describe_plan(p, o);
  // node b says "one per GPU": global rank numbers are known only at the rendezvous
  CHECK(text.find("node 0: a (10.0.0.5, ssh), 2 ranks") != std::string::npos);
  CHECK(text.find("RANK=<at rendezvous>") != std::string::npos);
  CHECK(text.find("MASTER_ADDR=10.0.0.5") != std::string::npos);
}

TEST_CASE("plan for standalone and manual modes") {
  Options o;
  o.command = {"prog"};
  o.nproc_per_node = 4;
  Plan p = make_plan(o, nullptr, "j");
  CHECK(p.nodes.size() == 1);
  CHECK(p.nodes[0].nproc == 4);
  CHECK(p.rdzv_bind == "127.0.0.1");
  CHECK(p.master_addr == "127.0.0.1");
  CHECK(describe_plan(p, o).find("RANK=3") != std::string::npos);

  o.mode = Mode::manual;
  o.nnodes = 3;
  o.node_rank = 1;
  o.master_addr = "10.9.9.9";
  p = make_plan(o, nullptr, "j");
  CHECK_FALSE(p.coordinator);
  CHECK(p.rdzv_connect == "10.9.9.9");
  CHECK(p.nnodes == 3);
}

TEST_CASE("default job names are safe directory names") {
  const std::string n = default_job_name("/opt/x/my prog", 0);
  CHECK(n.starts_with("my_prog-"));
  CHECK(n.find('/') == std::string::npos);
}

TEST_CASE("HMAC proofs depend on the secret and both nonces") {
  const std::string s1 = auth::random_bytes(32);
  const std::string s2 = auth::random_bytes(32);
  CHECK(s1 != s2);
  const auto p = auth::join_proof(s1, "server", "agent");
  CHECK(p.size() == 32);
  CHECK(auth::constant_time_equal(p, auth::join_proof(s1, "server", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::join_proof(s2, "server", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::join_proof(s1, "server2", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::welcome_proof(s1, "server", "agent")));
  // RFC 4231 test case 2
  CHECK(auth::to_hex(auth::hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
