// `dlaunch logs JOB [-r R | --all-ranks] [-t N] [-f]`: a job's rank log (rank
// 0 unless asked), or every rank's with each line prefixed by its rank; with
// -f new lines as they come until the job ends (a detached job too).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

// Prints a rank log from `offset` on: every line (tail < 0) or the last
// `tail`. A last line without a newline is held back while the job may still
// finish it, and printed once `whole` (the job has ended, or the caller reads
// once): it is often the crash message a user came for. Returns the offset of
// the first byte not printed.
std::uintmax_t print_lines(const std::string& path, std::uintmax_t offset, int tail,
                           const std::string& prefix, bool whole) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::deque<std::string> kept;
  std::string partial;  // bytes after the last newline read so far
  std::uintmax_t consumed = offset;
  auto emit = [&](std::string line) {
    if (tail < 0) {
      console().out(prefix + line);
    } else {
      kept.push_back(std::move(line));
      if (static_cast<int>(kept.size()) > tail) kept.pop_front();
    }
  };
  std::string chunk(1 << 16, '\0');
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const std::string_view got(chunk.data(), static_cast<std::size_t>(in.gcount()));
    std::size_t from = 0;
    for (std::size_t nl; (nl = got.find('\n', from)) != std::string_view::npos; from = nl + 1) {
      partial.append(got.substr(from, nl + 1 - from));
      consumed += partial.size();
      emit(std::exchange(partial, {}));
    }
    partial.append(got.substr(from));
  }
  if (whole && !partial.empty()) {
    consumed += partial.size();
    // Byte for byte into a file or pipe; on a terminal (or between prefixed
    // ranks) a newline keeps the next line from running on from it.
    if (!prefix.empty() || ::isatty(STDOUT_FILENO)) partial += '\n';
    emit(std::move(partial));
  }
  for (const auto& l : kept) console().out(prefix + l);
  console().flush();
  return consumed;
}

// What `logs -f` says once the job has ended, as `get` would, with an exit
// status a script can test: 0 only when the job succeeded.
int report_end(const std::string& name, const Job& job) {
  std::string line = "job " + name + " " + std::string(job_status_name(job.status));
  if (job.result && job.status != JobStatus::succeeded) {
    line += " (exit code " + std::to_string(job.result->exit_code) + ")";
    if (!job.result->root_cause.empty()) line += ": " + job.result->root_cause;
  }
  if (job.status == JobStatus::lost) line += ": its coordinator is gone without a result";
  console().note(line);
  if (job.status == JobStatus::succeeded) return 0;
  return job.result && job.result->exit_code != 0 ? job.result->exit_code : 1;
}

bool job_has_rank(const Job& job, int rank) {
  if (job.result && rank >= 0 && rank < job.result->world_size) return true;
  for (const auto& n : job.info.nodes) {
    if (n.first_rank >= 0 && rank >= n.first_rank && rank < n.first_rank + n.ranks) return true;
  }
  return false;
}

int print_logs(const std::string& name, const Job& job, const std::optional<int>& rank, int tail,
               bool follow) {
  // A PENDING job has no rank logs yet: following it waits for them.
  std::map<std::string, std::uintmax_t> offsets;
  // Each restart round has its own files (rank-<R>.<N>.log); they are shown
  // in order, each new one announced on stderr so that stdout stays byte for
  // byte what the rank wrote. With -t, only the newest round's tail.
  auto pass = [&](int lines, bool whole) {
    for (const auto& [r, rounds] : rank_log_rounds(job.dir)) {
      if (rank && *rank != r) continue;
      const std::string prefix = rank ? "" : "[" + std::to_string(r) + "] ";
      const int newest = rounds.rbegin()->first;
      for (const auto& [round, path] : rounds) {
        const bool first = !offsets.contains(path);
        if (first && lines >= 0 && round != newest) {
          std::error_code ec;
          offsets[path] = std::filesystem::file_size(path, ec);
          continue;
        }
        if (first && round > 0) {
          console().note("rank " + std::to_string(r) + ", restart " + std::to_string(round) + ": " +
                         path);
        }
        const std::uintmax_t from = first ? 0 : offsets[path];
        // An earlier round's file is complete: its last line is not waited for.
        offsets[path] =
            print_lines(path, from, first ? lines : -1, prefix, whole || round != newest);
      }
    }
  };
  if (rank && !rank_logs(job.dir).contains(*rank) && !(follow && is_active(job.status))) {
    // A rank that has written nothing has no file: its log is empty, not missing.
    if (!job_has_rank(job, *rank)) {
      console().error("job " + name + " has no rank " + std::to_string(*rank));
      return kExitFailure;
    }
    console().note("rank " + std::to_string(*rank) + " of job " + name + " has written nothing");
    return 0;
  }
  pass(tail, !follow);
  if (!follow) return 0;
  for (;;) {
    const Job now = load_job(job.dir).value_or(job);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const bool running = is_active(now.status);
    pass(-1, !running);
    if (!running) return report_end(name, now);  // after one last pass
  }
}

}  // namespace

Result<LogsArgs, int> parse_logs_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch logs: a job's rank logs", "dlaunch logs"};
  LogsArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("job", a.name, "job name (see dlaunch list)")->required();
  auto* rank_option =
      app.add_option("-r,--rank,-i,--instance", a.rank, "this rank's log (default: rank 0)");
  app.add_flag("--all-ranks", a.all_ranks, "every rank's log, each line prefixed with [RANK]")
      ->excludes(rank_option);
  app.add_option("-t,--tail", a.tail, "last N lines of each rank");
  app.add_flag("-f,--follow", a.follow, "keep printing new lines while the job runs");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int print_job_logs(const LogsArgs& a) {
  auto job = find_job_or_report(a.log_dir, a.name);
  if (!job) return job.error();
  // Rank 0 unless told otherwise.
  const std::optional<int> rank =
      a.all_ranks ? std::nullopt : std::optional<int>(a.rank.value_or(0));
  return print_logs(a.name, *job, rank, a.tail, a.follow);
}

int logs_command(int argc, const char* const* argv) {
  auto args = parse_logs_args(argc, argv);
  return args ? print_job_logs(*args) : args.error();
}

}  // namespace dlaunch
