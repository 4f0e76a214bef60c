#include "launcher/config/environment.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("valid_env_name: a shell's names, ASCII letters, digits and '_', no leading digit") {
  for (const char* name : {"A", "_", "NCCL_DEBUG", "my_var2", "_9"}) CHECK(valid_env_name(name));
  for (const char* name : {"", "9A", "A-B", "A B", "A=B", "A.B", "caf\xc3\xa9", "\xe9"})
    CHECK_FALSE(valid_env_name(name));
}

TEST_CASE("the coordinator's NCCL_, CUDA_, TORCH_, OMP_, HF_ variables follow by default") {
  const EnvVars shell = {{"NCCL_DEBUG", "INFO"},
                         {"CUDA_HOME", "/usr/local/cuda"},
                         {"CUDA_VISIBLE_DEVICES", "0"},
                         {"TORCH_SHOW_CPP_STACKTRACES", "1"},
                         {"OMP_NUM_THREADS", "4"},
                         {"HF_HOME", "/data/hf"},
                         {"PYTHONPATH", "/src"},
                         {"VIRTUAL_ENV", "/venv"},
                         {"PATH", "/usr/bin"},
                         {"LD_LIBRARY_PATH", "/opt/lib"},
                         {"HOME", "/root"},
                         {"RANK", "3"},
                         {"MY_FLAG", "x"},
                         {"MY_OTHER", "y"}};
  CHECK(forwarded_environment(shell, true, {}) == EnvVars{{"NCCL_DEBUG", "INFO"},
                                                          {"CUDA_HOME", "/usr/local/cuda"},
                                                          {"TORCH_SHOW_CPP_STACKTRACES", "1"},
                                                          {"OMP_NUM_THREADS", "4"},
                                                          {"HF_HOME", "/data/hf"},
                                                          {"PYTHONPATH", "/src"},
                                                          {"VIRTUAL_ENV", "/venv"}});
  CHECK(forwarded_environment(shell, false, {}).empty());
  CHECK(forwarded_environment(shell, false, {"PATH", "LD_LIBRARY_PATH", "MY_*", "RANK"}) ==
        EnvVars{{"PATH", "/usr/bin"},
                {"LD_LIBRARY_PATH", "/opt/lib"},
                {"MY_FLAG", "x"},
                {"MY_OTHER", "y"}});
}

TEST_CASE("env files: KEY=VALUE lines, comments, export, quotes; errors name file:line") {
  auto parsed =
      parse_env_file("# comment\n\nexport A=1\nB = \"two words\"\nC='x'\nD=\nE=a=b\r\n", "job.env");
  REQUIRE(parsed.ok());
  CHECK(*parsed == EnvVars{{"A", "1"}, {"B", "two words"}, {"C", "x"}, {"D", ""}, {"E", "a=b"}});

  parsed = parse_env_file("A=1\nnot a pair\n1X=2\nRANK=0\n", "job.env");
  REQUIRE_FALSE(parsed.ok());
  const auto& errors = parsed.error();
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].to_string().starts_with("job.env:2: "));
  CHECK(errors[1].to_string().starts_with("job.env:3: "));
  CHECK(errors[2].to_string() == "job.env:4: RANK is set by dlaunch for every rank");
}

TEST_CASE("--env items: later ones win; a bad item or a launcher variable is refused") {
  auto parsed = parse_env_assignments({"A=1", "B=x=y", "A=2"});
  REQUIRE(parsed.ok());
  CHECK(*parsed == EnvVars{{"A", "2"}, {"B", "x=y"}});
  for (const char* bad : {"A", "=1", "A B=1", "MASTER_ADDR=x"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_env_assignments({bad}).ok());
  }
}

TEST_CASE("precedence: forwarded < hosts file < --env, each variable named with its source") {
  const auto env = layered_environment({{"A", "fwd"}, {"B", "fwd"}, {"C", "fwd"}},
                                       {{"B", "file"}, {"C", "file"}}, {{"C", "cli"}});
  CHECK(env.at("A").value == "fwd");
  CHECK(env.at("A").source == EnvSource::forwarded);
  CHECK(env.at("B").value == "file");
  CHECK(env_source_name(env.at("B").source) == "hosts file");
  CHECK(env.at("C").value == "cli");
  CHECK(env_source_name(env.at("C").source) == "--env");
}
