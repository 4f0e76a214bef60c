#include <doctest/doctest.h>

#include "launcher/hang/stack_groups.h"
#include "launcher/hang/stack_verdict.h"
#include "launcher/hang/stacks_gathering.h"

using namespace dlaunch;

namespace {

// What faulthandler writes for a rank waiting in the all-reduce: its thread
// ids differ by process, and which thread took the signal ("Current") too.
std::string waiting_in_allreduce(int rank) {
  const std::string main = "Thread 0x00007f" + std::to_string(100000 + rank) +
                           " (most recent call first):\n"
                           "  File \"/usr/lib/python3/dist-packages/torch/distributed/"
                           "distributed_c10d.py\", line 1536 in all_reduce\n"
                           "  File \"/work/train.py\", line 30 in step\n"
                           "  File \"/work/train.py\", line 41 in <module>\n";
  const std::string helper = "Thread 0x00007e" + std::to_string(200000 + rank) +
                             " (most recent call first):\n"
                             "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n";
  return rank % 2 ? "Current thread" + helper.substr(6) + "\n" + main : main + "\n" + helper;
}

std::string stuck_here() {
  return "Thread 0x00007f0000000001 (most recent call first):\n"
         "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
         "  File \"/work/train.py\", line 12 in stuck_here\n"
         "  File \"/work/train.py\", line 29 in step\n";
}

RankStack answered(int rank, std::string text, std::string state = "S") {
  RankStack s;
  s.rank = rank;
  s.host = "node" + std::to_string(rank / 8);
  s.answered = true;
  s.report.rank = rank;
  s.report.state = std::move(state);
  s.report.text = std::move(text);
  return s;
}

}  // namespace

TEST_CASE(
    "1,000 ranks: the one whose stack differs is a group of its own, first, and the suspect") {
  std::vector<RankStack> stacks;
  for (int rank = 0; rank < 1000; ++rank)
    stacks.push_back(answered(rank, rank == 7 ? stuck_here() : waiting_in_allreduce(rank)));
  const auto groups = group_stacks(stacks);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].ranks == std::vector<int>{7});
  CHECK(groups[1].ranks.size() == 999);
  CHECK(rank_ranges(groups[1].ranks) == "0-6,8-999");
  const std::string text = format_groups(groups);
  CHECK(text.starts_with("rank 7 (1 rank), state S:\n    Thread 0x? (most recent call first):\n"));
  CHECK(text.find("ranks 0-6,8-999 (999 ranks), state S:\n") != std::string::npos);
  CHECK(text.find("line 12 in stuck_here") != std::string::npos);

  const auto verdict = judge_stacks(stacks, groups);
  CHECK(verdict.suspects == std::vector<int>{7});
  CHECK(format_verdict(verdict) ==
        "suspect: rank 7 on node0: its stack differs from the 999 ranks that wait together "
        "(ranks 0-6,8-999)\n");
}

TEST_CASE("a stopped rank or one in uninterruptible sleep is named before any stack") {
  std::vector<RankStack> stacks;
  for (int rank = 0; rank < 16; ++rank)
    stacks.push_back(answered(rank, waiting_in_allreduce(rank)));
  stacks[9] = answered(9, "threads:\n  thread 9 (python3) T\n", "T");
  stacks[12].report.state = "D";
  stacks[12].report.wchan = "nvidia_wait";
  const auto verdict = judge_stacks(stacks, group_stacks(stacks));
  CHECK(verdict.suspects == std::vector<int>{9, 12});
  CHECK(format_verdict(verdict) ==
        "suspect: rank 9 on node1: stopped (state T): it takes part in nothing\n"
        "suspect: rank 12 on node1: in uninterruptible sleep (state D, in nvidia_wait): blocked "
        "in the kernel, on a disk, a driver or a GPU\n");
}

TEST_CASE("a host that never answered is suspect; a rank that had exited is not") {
  std::vector<RankStack> stacks;
  for (int rank = 0; rank < 4; ++rank) stacks.push_back(answered(rank, waiting_in_allreduce(rank)));
  RankStack exited;
  exited.rank = 4;
  exited.host = "node0";
  stacks.push_back(exited);
  CHECK(judge_stacks(stacks, group_stacks(stacks)).suspects.empty());
  RankStack lost = exited;
  lost.rank = 5;
  lost.host = "node9";
  lost.host_lost = true;
  stacks.push_back(lost);
  const auto groups = group_stacks(stacks);
  CHECK(format_groups(groups).find("rank 5 (1 rank), state no answer from its host:\n    (no "
                                   "stack)\n") != std::string::npos);
  CHECK(format_verdict(judge_stacks(stacks, groups)) ==
        "suspect: rank 5 on node9: its host sent no stack (its agent or its link is gone)\n");
}

TEST_CASE("every rank in the same place: no rank stands out") {
  std::vector<RankStack> stacks;
  for (int rank = 0; rank < 8; ++rank) stacks.push_back(answered(rank, waiting_in_allreduce(rank)));
  const auto groups = group_stacks(stacks);
  CHECK(groups.size() == 1);
  CHECK(format_verdict(judge_stacks(stacks, groups)).starts_with("no rank stands out"));
}

TEST_CASE("native stacks from gdb and eu-stack group by function, not by address or argument") {
  const std::string a =
      "Thread 2 (Thread 0x7f11 (LWP 4242) \"mnist_dist\"):\n"
      "#0  0x00007f1111 in __futex_abstimed_wait_common (futex_word=0x55aa, expected=0) at "
      "futex.c:57\n"
      "#1  0x00007f2222 in gloo::transport::tcp::Pair::recv (this=0x55bb, rank=1) at pair.cc:9\n";
  const std::string b =
      "Thread 2 (Thread 0x7f99 (LWP 5151) \"mnist_dist\"):\n"
      "#0  0x00007f3333 in __futex_abstimed_wait_common (futex_word=0x66cc, expected=0) at "
      "futex.c:57\n"
      "#1  0x00007f4444 in gloo::transport::tcp::Pair::recv (this=0x66dd, rank=3) at pair.cc:9\n";
  CHECK(stack_signature(a) == stack_signature(b));
  CHECK(stack_signature(a).find("#1 gloo::transport::tcp::Pair::recv") != std::string::npos);
  const std::string eu = "PID 77 - process\nTID 77:\n#0  0x00007f3333 nanosleep\n";
  CHECK(stack_signature(eu) == "TID ?:\n#0 nanosleep\n");
}

TEST_CASE("native stacks group by their main thread: helper threads differ by rank") {
  const std::string rank0 =
      "Thread 3 (Thread 0x7f13 (LWP 4244) \"mnist_dist\"):\n#0  0x1 in "
      "c10d::TCPStoreMasterDaemon::run ()\n"
      "Thread 1 (Thread 0x7f11 (LWP 4242) \"mnist_dist\"):\n#0  0x2 in gloo::Pair::recv ()\n"
      "#1  0x3 in mnist::average_gradients (d=...) at distributed.cpp:115\n";
  const std::string rank2 =
      "Thread 1 (Thread 0x7f99 (LWP 5151) \"mnist_dist\"):\n#0  0x9 in gloo::Pair::recv ()\n"
      "#1  0x8 in mnist::average_gradients (d=...) at distributed.cpp:115\n";
  const std::string hung =
      "Thread 1 (Thread 0x7f55 (LWP 6161) \"mnist_dist\"):\n"
      "#0  0x7 in pause ()\n#1  0x6 in mnist::(anonymous namespace)::hang_here ()\n";
  CHECK(stack_signature(rank0) == stack_signature(rank2));
  CHECK(stack_signature(rank0) != stack_signature(hung));
  CHECK(stack_signature(hung).find("#1 mnist::{anonymous}::hang_here") != std::string::npos);
  const std::string eu0 = "PID 10 - process\nTID 11:\n#0  0x1 epoll_wait\nTID 10:\n#0  0x2 recv\n";
  const std::string eu2 = "PID 20 - process\nTID 20:\n#0  0x5 recv\n";
  CHECK(stack_signature(eu0) == stack_signature(eu2));
}

TEST_CASE("a gathering completes when every asked host sent its last report or is gone") {
  StacksGathering g(3, {{10, "a", {0, 1}}, {11, "b", {2, 3}}, {12, "c", {4}}});
  proto::StacksReport r;
  r.id = 3;
  r.rank = 0;
  r.state = "S";
  CHECK_FALSE(g.on_report(10, r));
  r.rank = 2;
  CHECK_FALSE(g.on_report(10, r));  // not a rank host a was asked for: ignored
  r.id = 2;
  r.rank = -1;
  CHECK_FALSE(g.on_report(10, r));  // another gathering's
  r.id = 3;
  CHECK_FALSE(g.on_report(10, r));
  CHECK_FALSE(g.on_gone(11));
  CHECK(g.on_report(12, r));
  const auto stacks = g.stacks();
  REQUIRE(stacks.size() == 5);
  CHECK(stacks[0].answered);
  CHECK((!stacks[1].answered && !stacks[1].host_lost));  // exited before it was asked
  CHECK((!stacks[2].answered && stacks[2].host_lost));
  CHECK((!stacks[4].answered && !stacks[4].host_lost));
}

TEST_CASE("two ranks: the one in no collective is named, the one in the all-reduce is not") {
  std::vector<RankStack> stacks{answered(0, waiting_in_allreduce(0)), answered(1, stuck_here())};
  const auto groups = group_stacks(stacks);
  REQUIRE(groups.size() == 2);
  const auto verdict = judge_stacks(stacks, groups);
  CHECK(verdict.suspects == std::vector<int>{1});
  CHECK(format_verdict(verdict) ==
        "suspect: rank 1 on node0: its stack is in no collective, while 1 rank waits in one "
        "(all_reduce: ranks 0)\n");
  // Both in no collective, or both in one: nothing to tell them apart.
  stacks[0] = answered(0, stuck_here() + "  File \"/work/train.py\", line 3 in other\n");
  CHECK(judge_stacks(stacks, group_stacks(stacks)).suspects.empty());
  stacks = {answered(0, waiting_in_allreduce(0)),
            answered(1, waiting_in_allreduce(1) + "  File \"x.py\", line 1 in barrier\n")};
  CHECK(judge_stacks(stacks, group_stacks(stacks)).suspects.empty());
}
