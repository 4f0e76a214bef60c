#include "launcher/cli/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

#include "common/console.h"
#include "common/did_you_mean.h"
#include "common/exit_codes.h"
#include "common/posix.h"

namespace dlaunch {
namespace {

constexpr HelpExample kRunExamples[] = {
    {"dlaunch --nproc-per-node 4 -- mnist_dist --synthetic 6000", "one machine"},
    {"dlaunch --hosts hosts.toml -- mnist_dist --synthetic 6000 --epochs 1", "hosts over SSH"},
    {"dlaunch --nnodes 2 --node-rank 0 --master-addr 10.0.1.2 -- mnist_dist --synthetic 6000",
     "by hand; node 0 prints the others' line"},
    {"dlaunch -d --name nightly --hosts hosts.toml -- mnist_dist --synthetic 6000",
     "detached, for cron"},
    {"dlaunch -- top -b -n 1", "the program top (ranks have no terminal), not dlaunch's top"},
};
constexpr HelpExample kListExamples[] = {
    {"dlaunch list", "active jobs and those of the last 24 hours, newest first"},
    {"dlaunch list --all --status FAILED --json", "every failed job, as JSON"},
};
constexpr HelpExample kGetExamples[] = {
    {"dlaunch get JOB", "status, hosts with ranks and agent pids, root cause, logs"},
    {"dlaunch get JOB --json", "the same as one JSON object"},
};
constexpr HelpExample kLogsExamples[] = {
    {"dlaunch logs JOB -f", "rank 0 as it runs, until the job ends"},
    {"dlaunch logs JOB --all-ranks -t 20", "the last 20 lines of every rank"},
    {"dlaunch logs JOB -r 3", "rank 3's whole log"},
};
constexpr HelpExample kStopExamples[] = {
    {"dlaunch stop JOB", "stop every rank on every host; the job ends STOPPED"},
    {"dlaunch stop JOB --grace 30", "30 s between SIGTERM and SIGKILL"},
};
constexpr HelpExample kStacksExamples[] = {
    {"dlaunch stacks JOB", "every rank's stack, ranks with the same stack grouped"},
    {"dlaunch stacks JOB -r 0-3", "ranks 0 to 3 only"},
};
constexpr HelpExample kDeleteExamples[] = {{"dlaunch delete JOB", "remove a finished job's logs"}};
constexpr HelpExample kTopExamples[] = {
    {"dlaunch top job", "running jobs: hosts, ranks, GPUs, CPU and memory of their ranks"},
    {"dlaunch top node --hosts hosts.toml", "GPUs per host: total, held by jobs, use, memory"},
};
constexpr HelpExample kUiExamples[] = {
    {"dlaunch ui", "the jobs, their logs and loss curves on http://127.0.0.1:8697/"},
};
constexpr HelpExample kMetricsExamples[] = {
    {"dlaunch metrics", "the jobs as Prometheus metrics"},
    {"dlaunch metrics -o dlaunch.prom", "atomically, as node_exporter's textfile collector reads"},
};
constexpr HelpExample kCheckExamples[] = {
    {"dlaunch check --hosts hosts.toml", "could a job launch there? hosts, MASTER_ADDR, matrix"},
    {"dlaunch check --hosts hosts.toml --json", "the same as one JSON document"},
};

constexpr Command kCommands[] = {
    {{"run", "start a job; the default when the first word is an option or a program",
      kRunExamples},
     run_command},
    {{"list", "jobs with their status (PENDING, RUNNING, ..., LOST), newest first", kListExamples},
     list_command},
    {{"get", "one job: status, hosts, ranks, times, root cause, logs, TensorBoard", kGetExamples},
     get_command},
    {{"logs", "a job's rank logs; -f follows a running job", kLogsExamples}, logs_command},
    {{"stop", "stop a job on every host", kStopExamples}, stop_command},
    {{"stacks", "every rank's stack of a running job, grouped, with a verdict on hangs",
      kStacksExamples},
     stacks_command},
    {{"delete", "remove finished jobs and their logs", kDeleteExamples}, delete_command},
    {{"top", "running jobs' ranks (top job) or the hosts' GPUs (top node)", kTopExamples},
     top_command},
    {{"check", "whether a job could launch on a hosts file's hosts, and what to fix",
      kCheckExamples},
     check_command},
    {{"ui", "a web page of the jobs, their logs and curves, with Prometheus' /metrics",
      kUiExamples},
     ui_command},
    {{"metrics", "the jobs as Prometheus metrics, for node_exporter's textfile collector",
      kMetricsExamples},
     metrics_command},
};

std::string unknown_command_message(std::string_view word) {
  std::vector<std::string_view> names;
  for (const auto& c : kCommands) names.push_back(c.help.name);
  const std::string quoted = "'" + std::string(word) + "'";
  if (auto suggestion = did_you_mean(word, names)) {
    return "unknown command " + quoted + "; did you mean '" + *suggestion + "'?";
  }
  std::string message =
      "unknown command " + quoted + " and no program " + quoted + " on PATH; the commands are";
  for (std::size_t i = 0; i < names.size(); ++i) {
    message += (i == 0 ? " " : ", ") + std::string(names[i]);
  }
  return message;
}

bool is_python_file(std::string_view word) {
  struct stat st {};
  return word.ends_with(".py") && ::stat(std::string(word).c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

const Command* find_command(std::string_view name) {
  for (const auto& c : kCommands) {
    if (c.help.name == name) return &c;
  }
  return nullptr;
}

std::vector<CommandHelp> command_help() {
  std::vector<CommandHelp> help;
  for (const auto& c : kCommands) help.push_back(c.help);
  return help;
}

FirstWord resolve_first_word(int argc, const char* const* argv, const ProgramLookup& on_path) {
  const Command* launch = find_command("run");
  if (argc < 2) return {launch, 0, {}};  // the launch says what is missing
  const std::string_view word = argv[1];
  if (const Command* command = find_command(word)) return {command, 1, {}};
  // Options and "--" lead a launch, and a path or a program on PATH is the
  // program to launch: all of these worked before there were commands.
  // An empty word goes to the launch too, which names it as an empty program.
  // A Python file here is torchrun's first word (`torchrun train.py`).
  if (word.empty() || word.starts_with('-') || word.find('/') != std::string_view::npos ||
      is_python_file(word) || on_path(word)) {
    return {launch, 0, {}};
  }
  return {nullptr, 0, unknown_command_message(word)};
}

bool program_on_path(std::string_view name) {
  return !find_on_path(name).empty();
}

int run_command_line(int argc, const char* const* argv) {
  const FirstWord first = resolve_first_word(argc, argv, program_on_path);
  if (!first.command) {
    console().error(first.error);
    return kExitUsage;
  }
  return first.command->run(argc - first.first_arg, argv + first.first_arg);
}

}  // namespace dlaunch
