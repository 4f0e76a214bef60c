#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/hosts/slurm_hosts.h"

using namespace dlaunch;

namespace {

using Names = std::vector<std::string>;

Names expand_ok(const std::string& text) {
  auto result = expand_hostlist(text);
  INFO("hostlist: ", text, " error: ", result.error);
  REQUIRE(result.error.empty());
  return result.hosts;
}

// The error for `text`, checked to contain `part`.
void check_refused(const std::string& text, const std::string& part) {
  auto result = expand_hostlist(text);
  INFO("hostlist: ", text);
  REQUIRE_FALSE(result.error.empty());
  CHECK(result.hosts.empty());
  CHECK_MESSAGE(result.error.find(part) != std::string::npos, result.error);
}

std::vector<int> counts_ok(const std::string& text) {
  auto result = expand_tasks_per_node(text);
  INFO("tasks per node: ", text, " error: ", result.error);
  REQUIRE(result.error.empty());
  return result.counts;
}

HostsFile slurm_ok(const Environment& env) {
  auto result = slurm_hosts(env);
  if (!result) {
    for (const auto& d : result.error()) MESSAGE(d.to_string());
    FAIL("expected Slurm's variables to give hosts");
  }
  return std::move(*result);
}

// The one diagnostic of `env`, which must name `variable` and contain `part`.
void check_slurm_error(const Environment& env, const std::string& variable,
                       const std::string& part) {
  auto result = slurm_hosts(env);
  REQUIRE_FALSE(result.ok());
  const auto& diags = result.error();
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file == variable);
  CHECK(diags[0].to_string().rfind(variable + ": ", 0) == 0);
  CHECK_MESSAGE(diags[0].message.find(part) != std::string::npos, diags[0].message);
}

std::vector<std::optional<int>> slots_of(const HostsFile& file) {
  std::vector<std::optional<int>> slots;
  for (const auto& h : file.hosts) slots.push_back(h.slots);
  return slots;
}

}  // namespace

TEST_CASE("hostlist: plain names, comma and whitespace lists") {
  CHECK(expand_ok("gpu01") == Names{"gpu01"});
  CHECK(expand_ok("a,b,c") == Names{"a", "b", "c"});
  CHECK(expand_ok("a b\tc\nd") == Names{"a", "b", "c", "d"});
  CHECK(expand_ok("a, b ,\nc") == Names{"a", "b", "c"});
  CHECK(expand_ok("node-1.cluster.example") == Names{"node-1.cluster.example"});
}

TEST_CASE("hostlist: ranges and lists in brackets, zero padding kept") {
  CHECK(expand_ok("gpu[01-04,07]") == Names{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"});
  CHECK(expand_ok("n[8-11]") == Names{"n8", "n9", "n10", "n11"});
  CHECK(expand_ok("n[08-11]") == Names{"n08", "n09", "n10", "n11"});
  CHECK(expand_ok("n[001-002]") == Names{"n001", "n002"});
  // The low end's digits set the width, for every number of the range.
  CHECK(expand_ok("n[009-11]") == Names{"n009", "n010", "n011"});
  CHECK(expand_ok("n[5]") == Names{"n5"});
  CHECK(expand_ok("n[3,1,2]") == Names{"n3", "n1", "n2"});
  CHECK(expand_ok("[1-2]") == Names{"1", "2"});
  CHECK(expand_ok("n[0-0]") == Names{"n0"});
}

TEST_CASE("hostlist: text after a group, and several groups in Slurm's order") {
  CHECK(expand_ok("gpu[1-2]x") == Names{"gpu1x", "gpu2x"});
  CHECK(expand_ok("gpu[1-2].ib") == Names{"gpu1.ib", "gpu2.ib"});
  CHECK(expand_ok("r[1-2]n[01-02]") == Names{"r1n01", "r1n02", "r2n01", "r2n02"});
  CHECK(expand_ok("r[1,3]n[1-2]s[0-1]") ==
        Names{"r1n1s0", "r1n1s1", "r1n2s0", "r1n2s1", "r3n1s0", "r3n1s1", "r3n2s0", "r3n2s1"});
}

TEST_CASE("hostlist: commas inside brackets belong to the group, outside they separate") {
  CHECK(expand_ok("n[01-02],gpu[1-2]x") == Names{"n01", "n02", "gpu1x", "gpu2x"});
  CHECK(expand_ok("a,n[1,3],b") == Names{"a", "n1", "n3", "b"});
  CHECK(expand_ok("r[1-2]n[1,3],login") == Names{"r1n1", "r1n3", "r2n1", "r2n3", "login"});
}

TEST_CASE("hostlist: malformed expressions are refused with the reason") {
  check_refused("", "names no host");
  check_refused(" ", "names no host");
  // An empty item is a typo, refused as -H refuses it.
  check_refused(" , ", "empty host at position 1");
  check_refused("a,,b", "empty host at position 2");
  check_refused("a, ,b", "empty host at position 2");
  check_refused(",a", "empty host at position 1");
  check_refused("a,b,", "empty host at position 3");
  check_refused("gpu[01-04", "'[' at position 4 has no ']'");
  check_refused("gpu01-04]", "']' at position 9 has no '['");
  check_refused("a,gpu]", "']' at position 6");
  check_refused("n[1-[2]]", "inside brackets");
  check_refused("n[]", "empty group");
  check_refused("n[1,,2]", "empty range");
  check_refused("n[1-]", "not a number or a range");
  check_refused("n[-2]", "not a number or a range");
  check_refused("n[1-2-3]", "not a number or a range");
  check_refused("n[a-b]", "only digits");
  check_refused("n[1 2]", "has no ']'");
  check_refused("n[5-3]", "ends below its start");
  check_refused("n[1234567890123456789]", "18 digits");
  check_refused("-oProxyCommand=x", "must not start with '-'");
}

TEST_CASE("hostlist: expansions beyond the limit are refused before they are made") {
  CHECK(expand_hostlist("n[1-100000]").hosts.size() == 100'000);
  check_refused("n[1-100001]", "more than 100000 hosts");
  check_refused("n[0-999999999999999999]", "more than 100000 hosts");
  check_refused("a[1-1000]b[1-1000]", "more than 100000 hosts");
  check_refused("n[1-60000],m[1-60000]", "more than 100000 hosts");
  auto small = expand_hostlist("n[1-5]", 4);
  CHECK(small.error.find("more than 4 hosts") != std::string::npos);
}

TEST_CASE("tasks per node: Slurm's compressed counts") {
  CHECK(counts_ok("4") == std::vector<int>{4});
  CHECK(counts_ok("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(counts_ok("1,2(x2),3") == std::vector<int>{1, 2, 2, 3});
  CHECK(counts_ok("8(x1)") == std::vector<int>{8});
  for (const char* bad : {"", "x", "2(3)", "2(x)", "2(x0)", "2(x3", "(x3)", "2,,1", "-1", "0",
                          "4097", "2(x3)1", " 2"}) {
    INFO("tasks per node: ", bad);
    CHECK_FALSE(expand_tasks_per_node(bad).error.empty());
  }
  CHECK(expand_tasks_per_node("1(x100001)").error.find("more than 100000") != std::string::npos);
}

TEST_CASE("slurm: nodes from SLURM_JOB_NODELIST, slots from SLURM_TASKS_PER_NODE") {
  const HostsFile file = slurm_ok({{"SLURM_JOB_ID", "1"},
                                   {"SLURM_JOB_NODELIST", "n[01-02],gpu[1-2]x"},
                                   {"SLURM_TASKS_PER_NODE", "2(x3),1"}});
  CHECK(file.path == "SLURM_JOB_NODELIST");
  REQUIRE(file.hosts.size() == 4);
  CHECK(file.hosts[0].name == "n01");
  CHECK(file.hosts[0].address == "n01");
  CHECK(file.hosts[3].name == "gpu2x");
  CHECK(file.hosts[3].line == 4);
  CHECK(slots_of(file) == std::vector<std::optional<int>>{2, 2, 2, 1});
  CHECK_FALSE(file.hosts[0].gpus.has_value());
}

TEST_CASE("slurm: every node's agent starts under srun, the batch host's too") {
  const HostsFile file = slurm_ok({{"SLURM_JOB_NODELIST", "localhost,n2"}});
  REQUIRE(file.hosts.size() == 2);
  for (const auto& host : file.hosts) {
    CHECK(host.transport == TransportKind::slurm);
    CHECK_FALSE(is_local_host(host));
  }
}

TEST_CASE("slurm: SLURM_NTASKS_PER_NODE first, then SLURM_GPUS_ON_NODE, then tasks per node") {
  const Environment base{{"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}};
  auto env = base;
  CHECK(slots_of(slurm_ok(env)) == std::vector<std::optional<int>>{1, 1});
  env["SLURM_GPUS_ON_NODE"] = "8";
  const HostsFile gpus = slurm_ok(env);
  CHECK(slots_of(gpus) == std::vector<std::optional<int>>{8, 8});
  CHECK(gpus.hosts[1].gpus == 8);
  env["SLURM_NTASKS_PER_NODE"] = "4";
  CHECK(slots_of(slurm_ok(env)) == std::vector<std::optional<int>>{4, 4});
  env["SLURM_NTASKS_PER_NODE"] = "3,5";
  CHECK(slots_of(slurm_ok(env)) == std::vector<std::optional<int>>{3, 5});
  // No GPUs: the tasks per node count.
  env = base;
  env["SLURM_GPUS_ON_NODE"] = "0";
  CHECK(slots_of(slurm_ok(env)) == std::vector<std::optional<int>>{1, 1});
  // Nothing at all: one rank per GPU, decided on the node.
  CHECK(slots_of(slurm_ok({{"SLURM_JOB_NODELIST", "a,b"}})) ==
        std::vector<std::optional<int>>{std::nullopt, std::nullopt});
}

TEST_CASE("slurm: errors name the variable and quote its text") {
  check_slurm_error({{"SLURM_JOB_ID", "1"}}, "SLURM_JOB_NODELIST", "is not set");
  check_slurm_error({{"SLURM_JOB_NODELIST", ""}}, "SLURM_JOB_NODELIST", "is not set");
  check_slurm_error({{"SLURM_JOB_NODELIST", "n[01-"}}, "SLURM_JOB_NODELIST",
                    "'n[01-' is not a hostlist: '[' at position 2 has no ']'");
  check_slurm_error({{"SLURM_JOB_NODELIST", "a,n[1-2],n1"}}, "SLURM_JOB_NODELIST",
                    "names 'n1' twice");
  check_slurm_error({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}},
                    "SLURM_TASKS_PER_NODE", "counts for 2 nodes, but SLURM_JOB_NODELIST names 3");
  check_slurm_error({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x"}},
                    "SLURM_TASKS_PER_NODE", "'2(x'");
  check_slurm_error({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NTASKS_PER_NODE", "1,2"}},
                    "SLURM_NTASKS_PER_NODE", "counts for 2 nodes");
  check_slurm_error({{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_GPUS_ON_NODE", "eight"}},
                    "SLURM_GPUS_ON_NODE", "'eight' is not a GPU count");
}
