// A running job's stacks and its hangs, on the coordinator's event loop:
// - `dlaunch stacks JOB` leaves a request in the job directory and sends
//   SIGUSR1; every agent is asked for its ranks' stacks, and the answer is
//   written to <job dir>/stacks/<UTC time>/ (rank-<R>.txt, summary.txt), the
//   groups and the verdict in summary.txt, and a reply file names it;
// - a job whose ranks make no progress (an output line, or with
//   --progress-pattern a matching one) for the stall time is STALLED: stacks
//   are gathered once and the verdict printed; progress makes it RUNNING
//   again. With --hang-timeout it is ended (or restarted) as HUNG instead;
// - ranks' NCCL flight recorder dumps, when they came, are written beside
//   the stacks and torch's analyzer runs over them; its findings join the
//   verdict (launcher/hang/flight_analysis.h).
// What the job does about a hang stays with JobPolicy (the hooks).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/hang/stack_verdict.h"
#include "launcher/hang/stacks_gathering.h"
#include "launcher/record/job_record.h"

namespace dlaunch {

class HangWatch {
 public:
  struct Settings {
    std::string job;
    std::string job_dir;  // empty: no `dlaunch stacks`, no files
    // No progress for this long: the job stalled. Zero: never noticed.
    std::chrono::milliseconds stall_after{0};
    bool act = false;  // --hang-timeout: end or restart the job
    std::optional<std::regex> progress;
    std::string progress_text;  // the pattern as given, for messages
  };
  struct Hooks {
    std::function<JobStatus()> status;
    // Each node with ranks, its connection, host and those of `wanted` it
    // runs (every rank when `wanted` is empty).
    std::function<std::vector<StacksGathering::Asked>(const std::set<int>& wanted)> ranks;
    std::function<void(ConnId, const proto::Message&)> send;
    std::function<void(const std::string&)> note;
    std::function<void(bool)> set_stalled;
    // --hang-timeout: what happened, and the first suspect rank (or -1).
    std::function<void(const std::string& what, int suspect)> hung;
  };

  HangWatch(asio::io_context& io, Settings settings, Hooks hooks);

  void start();
  void stop();
  // A rank's output line reached the coordinator.
  void on_line(std::string_view text);
  void on_report(ConnId conn, const proto::StacksReport& report);
  void on_connection_closed(ConnId conn);

  // The requests `dlaunch stacks` leaves, and its reply (stacks_command).
  static std::string request_prefix() { return "stacks-request-"; }
  static std::string reply_path(const std::string& job_dir, const std::string& id);
  // There while a coordinator answers requests: SIGUSR1's default action
  // would end one that does not.
  static std::string ready_path(const std::string& job_dir);

 private:
  void tick();
  void arm_tick();
  void take_requests();
  void begin(const std::set<int>& wanted, bool for_stall);
  void end_gathering();
  // The stacks directory, and how many flight recorder dumps went into it.
  std::string write_files(const std::vector<RankStack>& stacks, const std::string& summary,
                          int& flight_dumps);
  // torch's analyzer over the dumps, on a thread of its own; the verdict owed
  // (if any) waits for its findings.
  void analyze_flight_records(const std::string& dir, std::optional<StackVerdict> verdict);
  struct PendingAnalysis;
  void poll_analysis(std::shared_ptr<PendingAnalysis> pending, const std::string& dir,
                     std::optional<StackVerdict> verdict);
  void deliver_verdict(const StackVerdict& verdict, const std::string& dir,
                       const std::vector<std::string>& flight);
  void next_signal();

  Settings s_;
  Hooks hooks_;
  Timer tick_timer_;
  Timer gather_timer_;
  Timer analysis_timer_;  // polls the analyzer's thread: nothing is posted from it
  asio::signal_set requests_;
  SteadyClock::time_point last_progress_{};
  bool stalled_ = false;
  bool verdict_owed_ = false;  // the gathering under way is for a stall
  int next_id_ = 1;
  std::optional<StacksGathering> gathering_;
  std::vector<std::string> replies_owed_;  // request ids of the gathering under way
  bool stopped_ = false;
};

}  // namespace dlaunch
