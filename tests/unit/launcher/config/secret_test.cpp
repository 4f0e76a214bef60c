#include "launcher/config/secret.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/unit/scratch_dir.h"

namespace dlaunch {
namespace {

ManualSecret chosen(const ManualSecretInputs& in) {
  auto result = choose_manual_secret(in);
  REQUIRE(result.ok());
  return *result;
}

std::string error_of(const ManualSecretInputs& in) {
  auto result = choose_manual_secret(in);
  REQUIRE_FALSE(result.ok());
  return result.error();
}

}  // namespace

TEST_CASE("manual mode: node 0 without a secret makes one, never an open job") {
  const auto a = chosen({.nnodes = 2, .node_rank = 0});
  const auto b = chosen({.nnodes = 2, .node_rank = 0});
  CHECK(a.generated);
  CHECK(a.secret.size() == 64);  // 256 bits, in hex so it can be pasted
  CHECK(a.secret != b.secret);
  // Alone, nobody needs to be told.
  CHECK_FALSE(chosen({.nnodes = 1, .node_rank = 0}).generated);
}

TEST_CASE("manual mode: another node without a secret is told where it comes from") {
  const auto error = error_of({.nnodes = 3, .node_rank = 2});
  CHECK(error.find("node 2 needs the job's secret") != std::string::npos);
  CHECK(error.find("DLAUNCH_SECRET=") != std::string::npos);
  CHECK(error.find("--secret-file") != std::string::npos);
  CHECK(error.find("--insecure-no-secret") != std::string::npos);
}

TEST_CASE("manual mode: a file wins over the environment, the environment over making one") {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/secret";
  std::ofstream(path) << "from-file\n";
  ::chmod(path.c_str(), 0600);
  auto s = chosen({.nnodes = 2, .node_rank = 1, .secret_file = path, .secret_env = "env"});
  CHECK(s.secret == "from-file");
  CHECK(s.warning.empty());
  s = chosen({.nnodes = 2, .node_rank = 0, .secret_env = " from-env \n"});
  CHECK(s.secret == " from-env");
  CHECK_FALSE(s.generated);
  CHECK(error_of({.nnodes = 2, .node_rank = 1, .secret_env = "\n"}) ==
        "DLAUNCH_SECRET is set but empty");
  ::chmod(path.c_str(), 0644);
  CHECK(chosen({.nnodes = 2, .secret_file = path}).warning.find("chmod 600") != std::string::npos);
  CHECK(error_of({.nnodes = 2, .secret_file = dir.path() + "/none"})
            .find("cannot read secret file " + dir.path() + "/none") != std::string::npos);
}

TEST_CASE("manual mode: --insecure-no-secret is the only way to run open") {
  const auto s = chosen({.nnodes = 2, .node_rank = 1, .insecure_no_secret = true});
  CHECK(s.secret.empty());
  CHECK_FALSE(s.generated);
}

TEST_CASE("the line for the other nodes: the secret in the environment, the node rank as <N>") {
  CHECK(other_nodes_command({"dlaunch", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                             "10.0.1.2", "--", "python3", "train.py", "--rank", "0"},
                            "ab12") ==
        "DLAUNCH_SECRET=ab12 dlaunch --nnodes 2 --node-rank <N> --master-addr 10.0.1.2 -- "
        "python3 train.py --rank 0");
  CHECK(other_nodes_command({"dlaunch", "--node_rank=0", "--nnodes=3", "--", "echo", "a b"}, "x") ==
        "DLAUNCH_SECRET=x dlaunch --node_rank=<N> --nnodes=3 -- echo "
        "'a b'");
}

}  // namespace dlaunch
