// Each job command's arguments as parsed, apart from its run: the table's
// function for a command (commands.h) is parse_<command>_args then the run,
// and a test or another command can run one with arguments it made itself,
// as ninja's tools take their parsed options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "launcher/config/options.h"

namespace dlaunch {

struct ListArgs {
  std::string log_dir;
  bool all = false;
  bool json_out = false;
  std::vector<std::string> statuses_text;
};
// Fails with the exit code once --help or a usage error is printed.
Result<ListArgs, int> parse_list_args(int argc, const char* const* argv);
int list_jobs(const ListArgs& args);

struct GetArgs {
  std::string log_dir;
  std::string name;
  bool json_out = false;
};
// Fails with the exit code once --help or a usage error is printed.
Result<GetArgs, int> parse_get_args(int argc, const char* const* argv);
int get_job(const GetArgs& args);

struct LogsArgs {
  std::string log_dir;
  std::string name;
  std::optional<int> rank;
  bool all_ranks = false;
  int tail = -1;
  bool follow = false;
};
// Fails with the exit code once --help or a usage error is printed.
Result<LogsArgs, int> parse_logs_args(int argc, const char* const* argv);
int print_job_logs(const LogsArgs& args);

struct StopArgs {
  std::string log_dir;
  std::string name;
  std::optional<int> grace_s;
  int wait_s = 60;
};
// Fails with the exit code once --help or a usage error is printed.
Result<StopArgs, int> parse_stop_args(int argc, const char* const* argv);
int stop_job(const StopArgs& args);

struct DeleteArgs {
  std::string log_dir;
  std::vector<std::string> names;
};
// Fails with the exit code once --help or a usage error is printed.
Result<DeleteArgs, int> parse_delete_args(int argc, const char* const* argv);
int delete_jobs(const DeleteArgs& args);

struct StacksArgs {
  std::string log_dir;
  std::string name;
  std::string ranks_text;
  int timeout_s = 90;
};
// Fails with the exit code once --help or a usage error is printed.
Result<StacksArgs, int> parse_stacks_args(int argc, const char* const* argv);
int gather_stacks(const StacksArgs& args);

struct MetricsArgs {
  std::string log_dir;
  std::string output;
};
// Fails with the exit code once --help or a usage error is printed.
Result<MetricsArgs, int> parse_metrics_args(int argc, const char* const* argv);
int write_metrics(const MetricsArgs& args);

struct UiArgs {
  std::string log_dir;
  std::string listen_text;
  std::string token_file;
  bool verbose = false;
};
// Fails with the exit code once --help or a usage error is printed.
Result<UiArgs, int> parse_ui_args(int argc, const char* const* argv);
int serve_ui(const UiArgs& args);

// `dlaunch check`: the hosts (and their SSH settings) in `o`, the rest its own.
struct CheckArgs {
  Options o;
  bool json = false;
  int timeout_s = 60;
  int matrix_s = 6;
  int nccl_timeout_s = 180;
  std::string matrix_pairs = "auto";
  std::string sync_git;
  bool nccl = false;
};
Result<CheckArgs, int> parse_check_args(int argc, const char* const* argv);
int check_hosts(const CheckArgs& args);

}  // namespace dlaunch
