// `dlaunch logs JOB [-r R | --all-ranks] [-t N] [-f]`: a job's rank log (rank
// 0 unless asked), or every rank's with each line prefixed by its rank; with
// -f new lines as they come until the job ends (a detached job too).
#include <chrono>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "common/console.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

// Prints the last `tail` lines (all when < 0) of a file from `offset` on and
// returns the offset after the last complete line.
std::uintmax_t print_lines(const std::string& path, std::uintmax_t offset, int tail,
                           const std::string& prefix) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::deque<std::string> kept;
  std::string line;
  std::uintmax_t consumed = offset;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // an incomplete last line: wait for the rest
    consumed += line.size() + 1;
    if (tail < 0) {
      console().out(prefix + line + "\n");
    } else {
      kept.push_back(line);
      if (static_cast<int>(kept.size()) > tail) kept.pop_front();
    }
  }
  for (const auto& l : kept) console().out(prefix + l + "\n");
  console().flush();
  return consumed;
}

int print_logs(const std::string& name, const Job& job, const std::optional<int>& rank, int tail,
               bool follow) {
  // A PENDING job has no rank logs yet: following it waits for them.
  std::map<std::string, std::uintmax_t> offsets;
  auto pass = [&](int lines) {
    for (const auto& [r, path] : rank_logs(job.dir)) {
      if (rank && *rank != r) continue;
      const std::string prefix = rank ? "" : "[" + std::to_string(r) + "] ";
      const bool first = !offsets.contains(path);
      const std::uintmax_t from = first ? 0 : offsets[path];
      offsets[path] = print_lines(path, from, first ? lines : -1, prefix);
    }
  };
  if (rank && !rank_logs(job.dir).contains(*rank) && !(follow && is_active(job.status))) {
    console().error("job " + name + " has no log for rank " + std::to_string(*rank));
    return 1;
  }
  pass(tail);
  while (follow) {
    const bool running = is_active(load_job(job.dir).value_or(job).status);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pass(-1);
    if (!running) break;  // one last pass after the job ended
  }
  return 0;
}

}  // namespace

int logs_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch logs: a job's rank logs", "dlaunch logs"};
  std::string log_dir;
  std::string name;
  std::optional<int> rank;
  bool all_ranks = false;
  int tail = -1;
  bool follow = false;
  add_log_dir_option(app, log_dir);
  app.add_option("job", name, "job name (see dlaunch list)")->required();
  auto* rank_option =
      app.add_option("-r,--rank,-i,--instance", rank, "this rank's log (default: rank 0)");
  app.add_flag("--all-ranks", all_ranks, "every rank's log, each line prefixed with [RANK]")
      ->excludes(rank_option);
  app.add_option("-t,--tail", tail, "last N lines of each rank");
  app.add_flag("-f,--follow", follow, "keep printing new lines while the job runs");
  if (auto done = parse_subcommand(app, argc, argv)) return *done;

  auto job = find_job_or_report(log_dir, name);
  if (!job) return 1;
  if (!all_ranks && !rank) rank = 0;
  return print_logs(name, *job, all_ranks ? std::nullopt : rank, tail, follow);
}

}  // namespace dlaunch
