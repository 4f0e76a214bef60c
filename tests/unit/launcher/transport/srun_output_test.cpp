#include "launcher/transport/srun_output.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {

std::vector<SrunLine> feed_all(SrunOutput& out, std::string_view bytes) {
  return out.feed(bytes);
}

}  // namespace

TEST_CASE("srun --label lines go to their task; srun's own lines to none") {
  SrunOutput out(2);
  const auto lines = feed_all(out,
                              "0: dlaunch-agent: cannot bind\n"
                              "1: slurmstepd-n2: error: *** STEP 4.0 ON n2 CANCELLED ***\n"
                              "srun: Job step aborted\n");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].task == 0);
  CHECK(lines[0].text == "dlaunch-agent: cannot bind\n");
  CHECK(lines[1].task == 1);
  CHECK(lines[1].text == "slurmstepd-n2: error: *** STEP 4.0 ON n2 CANCELLED ***\n");
  CHECK(lines[2].task == -1);
  CHECK(lines[2].text == "srun: Job step aborted\n");
}

TEST_CASE("labels are padded to the widest task id; out-of-range ids are srun's") {
  SrunOutput out(12);
  auto lines = feed_all(out, " 3: three\n11: eleven\n12: not a task\n: empty id\n7:no space\n");
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].task == 3);
  CHECK(lines[0].text == "three\n");
  CHECK(lines[1].task == 11);
  CHECK(lines[2].task == -1);
  CHECK(lines[2].text == "12: not a task\n");
  CHECK(lines[3].task == -1);
  CHECK(lines[4].task == -1);
}

TEST_CASE("bytes in any pieces make the same lines; the last one comes at finish") {
  SrunOutput out(2);
  CHECK(out.feed("1").empty());
  CHECK(out.feed(": par").empty());
  auto lines = out.feed("tial\n0: x\n1: tail without newline");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].task == 1);
  CHECK(lines[0].text == "partial\n");
  CHECK(lines[1].task == 0);
  auto rest = out.finish();
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].task == 1);
  CHECK(rest[0].text == "tail without newline");
  CHECK(out.finish().empty());
}

TEST_CASE("a line past kMaxLine is passed on in parts") {
  SrunOutput out(1);
  const std::string big(SrunOutput::kMaxLine + 10, 'x');
  auto lines = out.feed("0: " + big);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].task == 0);
  CHECK(lines[0].text.size() == big.size());
  CHECK(out.feed("\n").size() == 1);
}

TEST_CASE("parse_task_exit reads srun's task failures") {
  auto exit = parse_task_exit("srun: error: n2: task 1: Exited with exit code 3\n");
  REQUIRE(exit);
  CHECK(exit->node == "n2");
  CHECK(exit->task == 1);
  CHECK(exit->exit_code == 3);

  exit = parse_task_exit("srun: error: gpu-07.cluster: task 12: Killed");
  REQUIRE(exit);
  CHECK(exit->node == "gpu-07.cluster");
  CHECK(exit->task == 12);
  CHECK(exit->exit_code == 137);

  exit = parse_task_exit("srun: error: n1: task 0: Terminated\n");
  REQUIRE(exit);
  CHECK(exit->exit_code == 143);

  exit = parse_task_exit("srun: error: n1: task 0: Segmentation fault (core dumped)\n");
  REQUIRE(exit);
  CHECK(exit->exit_code == 139);

  CHECK_FALSE(parse_task_exit("srun: error: Unable to create step for job 7: busy\n"));
  CHECK_FALSE(parse_task_exit("srun: error: n1: task 0: Exited with exit code x\n"));
  CHECK_FALSE(parse_task_exit("srun: error: n1: task 0: Exited with exit code 300\n"));
  CHECK_FALSE(parse_task_exit("srun: error: n1: task 0: Something odd\n"));
  CHECK_FALSE(parse_task_exit("0: srun: error: n1: task 0: Killed\n"));
  CHECK_FALSE(parse_task_exit("srun: launch/slurm: _step_signal: Terminating StepId=2.0\n"));
}

TEST_CASE("agent_exit_codes: named nodes get their codes, the others 0") {
  const std::vector<std::string> nodes{"n1", "n2", "n3"};
  CHECK(agent_exit_codes(nodes, {}, 0) == std::vector<int>{0, 0, 0});
  CHECK(agent_exit_codes(nodes, {{"n2", 1, 3}}, 3) == std::vector<int>{0, 3, 0});
  // By name first: the task id is only the fallback.
  CHECK(agent_exit_codes(nodes, {{"n3", 0, 137}, {"n1", 2, 143}}, 137) ==
        std::vector<int>{143, 0, 137});
  CHECK(agent_exit_codes(nodes, {{"elsewhere", 1, 9}}, 9) == std::vector<int>{0, 9, 0});
  CHECK(node_of(nodes, {"elsewhere", 7, 1}) == std::nullopt);
  CHECK(node_of(nodes, {"n3", 0, 1}) == 2u);
}

TEST_CASE("agent_exit_codes: srun failing with no task line fails every node") {
  CHECK(agent_exit_codes({"a", "b"}, {}, 1) == std::vector<int>{1, 1});
  CHECK(agent_exit_codes({"a", "b"}, {}, 127) == std::vector<int>{127, 127});
}
