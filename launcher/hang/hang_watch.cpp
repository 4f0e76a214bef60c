#include "launcher/hang/hang_watch.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "common/log.h"
#include "common/private_file.h"
#include "common/text.h"
#include "launcher/config/options.h"
#include "launcher/hang/flight_analysis.h"

namespace dlaunch {
namespace {

// A gathering waits this long for every agent; then what came is written and
// the silent hosts are named. A stall's verdict may not wait for a slow gdb.
constexpr std::chrono::seconds kGatherLimit{60};
constexpr std::chrono::seconds kStallGatherLimit{20};
// Files in the job directory (the requests' own prefix is request_prefix()).
constexpr std::string_view kReadyFile = "stacks-ready";
constexpr std::string_view kReplyPrefix = "stacks-reply-";

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

std::string seconds_text(std::chrono::milliseconds ms) {
  const auto s = ms.count() / 1000;
  if (s >= 120 && s % 60 == 0) return std::to_string(s / 60) + " min";
  return std::to_string(s) + " s";
}

std::string rank_header(const RankStack& s) {
  std::string out = "rank " + std::to_string(s.rank) + " on " + s.host + ": ";
  if (!s.answered) return out + (s.host_lost ? "no answer from its host\n" : "exited\n");
  const auto& r = s.report;
  out += "state " + (r.state.empty() ? std::string("gone") : r.state);
  out += ", " + std::to_string(r.cpu_ms) + " ms of CPU in " + std::to_string(r.sampled_ms) + " ms";
  if (!r.wchan.empty()) out += ", waiting in " + r.wchan;
  out += r.silent_ms < 0 ? ", no output yet"
                         : ", last output " + std::to_string(r.silent_ms / 1000) + " s ago";
  if (!r.tools.empty()) out += ", stack by " + r.tools;
  return out + "\n";
}

}  // namespace

HangWatch::HangWatch(asio::io_context& io, Settings settings, Hooks hooks)
    : s_(std::move(settings)),
      hooks_(std::move(hooks)),
      tick_timer_(io),
      gather_timer_(io),
      analysis_timer_(io),
      requests_(io) {}

std::string HangWatch::reply_path(const std::string& job_dir, const std::string& id) {
  return job_dir + "/" + std::string(kReplyPrefix) + id;
}

std::string HangWatch::ready_path(const std::string& job_dir) {
  return job_dir + "/" + std::string(kReadyFile);
}

void HangWatch::start() {
  last_progress_ = SteadyClock::now();
  if (!s_.job_dir.empty()) {
    asio::error_code ec;
    requests_.add(SIGUSR1, ec);
    if (!ec) {
      next_signal();
      // `dlaunch stacks` signals only a coordinator that says it listens:
      // SIGUSR1's default action would end one that does not.
      (void)write_private_file(s_.job_dir, std::string(kReadyFile), "1\n");
    }
  }
  if (s_.stall_after.count() > 0) arm_tick();
}

void HangWatch::stop() {
  stopped_ = true;
  tick_timer_.cancel();
  gather_timer_.cancel();
  analysis_timer_.cancel();
  asio::error_code ec;
  requests_.cancel(ec);
  if (!s_.job_dir.empty()) ::unlink(ready_path(s_.job_dir).c_str());
}

void HangWatch::next_signal() {
  requests_.async_wait([this](const asio::error_code& ec, int) {
    if (ec || stopped_) return;
    take_requests();
    next_signal();
  });
}

void HangWatch::arm_tick() {
  const auto every = std::clamp(s_.stall_after / 10, std::chrono::milliseconds(200),
                                std::chrono::milliseconds(5000));
  tick_timer_.expires_after(every);
  tick_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || stopped_) return;
    tick();
    arm_tick();
  });
}

void HangWatch::on_line(std::string_view text) {
  if (s_.progress && !std::regex_search(text.begin(), text.end(), *s_.progress)) return;
  last_progress_ = SteadyClock::now();
  if (!stalled_) return;
  stalled_ = false;
  hooks_.set_stalled(false);
  hooks_.note("job " + s_.job + " made progress again: RUNNING");
}

void HangWatch::tick() {
  const JobStatus status = hooks_.status();
  if (status != JobStatus::running && status != JobStatus::stalled) {
    // Starting, restarting: no rank owes progress yet.
    last_progress_ = SteadyClock::now();
    return;
  }
  if (stalled_ || SteadyClock::now() - last_progress_ < s_.stall_after) return;
  stalled_ = true;
  hooks_.set_stalled(true);
  hooks_.note("job " + s_.job + ": no rank made progress for " + seconds_text(s_.stall_after) +
              (s_.progress ? " (no line matching --progress-pattern '" + s_.progress_text + "')"
                           : " (no output line)") +
              "; gathering every rank's stack");
  begin({}, /*for_stall=*/true);
}

void HangWatch::take_requests() {
  std::set<int> wanted;
  bool all = false;
  if (DIR* dir = ::opendir(s_.job_dir.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (!name.starts_with(request_prefix())) continue;
      const std::string path = s_.job_dir + "/" + name;
      std::ifstream in(path);
      std::string ranks;
      std::getline(in, ranks);
      ::unlink(path.c_str());
      replies_owed_.push_back(name.substr(request_prefix().size()));
      // Written by `dlaunch stacks` from its own parse_rank_list; none: all.
      const auto parsed = parse_rank_list(trim(ranks));
      if (!parsed || parsed->empty()) all = true;
      if (parsed) wanted.insert(parsed->begin(), parsed->end());
    }
    ::closedir(dir);
  }
  if (replies_owed_.empty() || gathering_) return;  // the one under way answers them too
  begin(all ? std::set<int>{} : wanted, /*for_stall=*/false);
}

void HangWatch::begin(const std::set<int>& wanted, bool for_stall) {
  verdict_owed_ = verdict_owed_ || for_stall;
  if (gathering_) return;
  auto asked = hooks_.ranks(wanted);
  gathering_.emplace(next_id_++, std::move(asked));
  // Each agent is named only its own ranks (at most a node's 4,096, what
  // StacksRequest holds), whatever the user asked for.
  for (const auto& a : gathering_->asked())
    hooks_.send(a.conn, proto::StacksRequest{gathering_->id(),
                                             wanted.empty() ? std::vector<std::int32_t>{}
                                                            : std::vector<std::int32_t>(
                                                                  a.ranks.begin(), a.ranks.end())});
  log::debug("asked ", gathering_->asked().size(), " agents for their ranks' stacks");
  if (gathering_->complete()) return end_gathering();
  gather_timer_.expires_after(for_stall ? kStallGatherLimit : kGatherLimit);
  gather_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec && !stopped_ && gathering_) end_gathering();
  });
}

void HangWatch::on_report(ConnId conn, const proto::StacksReport& report) {
  if (gathering_ && gathering_->on_report(conn, report)) end_gathering();
}

void HangWatch::on_connection_closed(ConnId conn) {
  if (gathering_ && gathering_->on_gone(conn)) end_gathering();
}

void HangWatch::end_gathering() {
  gather_timer_.cancel();
  const auto stacks = gathering_->stacks();
  gathering_.reset();
  const auto groups = group_stacks(stacks);
  const auto verdict = judge_stacks(stacks, groups);
  std::set<std::string> hosts;
  for (const auto& s : stacks) hosts.insert(s.host);
  const std::string summary =
      "stacks of job " + s_.job + ": " + std::to_string(stacks.size()) + " ranks on " +
      std::to_string(hosts.size()) + (hosts.size() == 1 ? " host" : " hosts") +
      ", smallest group first\n" + format_groups(groups) + "\nverdict:\n" + format_verdict(verdict);
  int flight_dumps = 0;
  const std::string dir = write_files(stacks, summary, flight_dumps);
  for (const auto& id : replies_owed_) {
    if (!write_private_file(s_.job_dir, std::string(kReplyPrefix) + id, dir + "\n"))
      log::warn("cannot write the reply to `dlaunch stacks` in ", s_.job_dir);
  }
  replies_owed_.clear();
  const bool owed = verdict_owed_;
  verdict_owed_ = false;
  if (flight_dumps > 0 && !dir.empty())
    return analyze_flight_records(dir, owed ? std::optional(verdict) : std::nullopt);
  if (owed) deliver_verdict(verdict, dir, {});
}

struct HangWatch::PendingAnalysis {
  std::atomic<bool> done{false};
  FlightAnalysis result;
};

void HangWatch::analyze_flight_records(const std::string& dir,
                                       std::optional<StackVerdict> verdict) {
  auto pending = std::make_shared<PendingAnalysis>();
  std::thread([pending, dir] {
    pending->result = dlaunch::analyze_flight_records(dir);
    pending->done = true;
  }).detach();
  poll_analysis(std::move(pending), dir, std::move(verdict));
}

void HangWatch::poll_analysis(std::shared_ptr<PendingAnalysis> pending, const std::string& dir,
                              std::optional<StackVerdict> verdict) {
  analysis_timer_.expires_after(std::chrono::milliseconds(100));
  analysis_timer_.async_wait([this, pending, dir, verdict](const asio::error_code& ec) {
    if (ec || stopped_) return;
    if (!pending->done) return poll_analysis(pending, dir, verdict);
    const auto& a = pending->result;
    (void)write_private_file(
        dir, "flight-recorder-analysis.txt",
        (a.tool.empty() ? "" : a.tool + "\n\n") + (a.ran ? a.text : a.error + "\n" + a.text));
    std::vector<std::string> findings;
    if (a.ran) {
      findings = flight_findings(a.text);
      if (findings.empty()) findings.push_back(a.tool + " found nothing wrong");
    } else {
      findings.push_back(a.error);
    }
    // `dlaunch get` shows them under the verdict of this gathering.
    if (std::ifstream last(s_.job_dir + "/stacks/last.txt"); last) {
      std::string named;
      std::getline(last, named);
      last.close();
      if (named == dir) {
        std::ofstream more(s_.job_dir + "/stacks/last.txt", std::ios::app);
        for (const auto& line : findings) more << "flight recorder: " << line << "\n";
      }
    }
    if (verdict) return deliver_verdict(*verdict, dir, findings);
    std::string block = "flight recorder on job " + s_.job + ":";
    for (const auto& line : findings) block += "\n  " + line;
    hooks_.note(block);
  });
}

void HangWatch::deliver_verdict(const StackVerdict& verdict, const std::string& dir,
                                const std::vector<std::string>& flight) {
  std::string block = "verdict on job " + s_.job + ":";
  for (const auto& line : split_lines(format_verdict(verdict))) block += "\n  " + line;
  for (const auto& line : flight) block += "\n  flight recorder: " + line;
  if (!dir.empty())
    block += "\n  every rank's stack: " + dir + " (or: dlaunch stacks " + s_.job + ")";
  hooks_.note(block);
  if (s_.act && stalled_) {
    std::string what =
        "no rank made progress for " + seconds_text(s_.stall_after) + " (--hang-timeout)";
    if (!verdict.why.empty()) what += "; suspect: " + verdict.why.front();
    hooks_.hung(what, verdict.suspects.empty() ? -1 : verdict.suspects.front());
    stalled_ = false;
    last_progress_ = SteadyClock::now();
  }
}

std::string HangWatch::write_files(const std::vector<RankStack>& stacks, const std::string& summary,
                                   int& flight_dumps) {
  if (s_.job_dir.empty()) return {};
  std::string dir = s_.job_dir + "/stacks/" + utc_stamp();
  for (int n = 2; ::access(dir.c_str(), F_OK) == 0; ++n)
    dir = s_.job_dir + "/stacks/" + utc_stamp() + "-" + std::to_string(n);
  if (auto made = make_private_dirs(dir); !made) {
    log::warn(made.error());
    return {};
  }
  for (const auto& s : stacks) {
    std::string text = rank_header(s);
    if (s.answered) text += "\n" + s.report.text;
    (void)write_private_file(dir, "rank-" + std::to_string(s.rank) + ".txt", text);
    if (s.answered && !s.report.flight_record.empty() &&
        write_private_file(dir, kFlightDumpPrefix + std::to_string(s.rank), s.report.flight_record))
      ++flight_dumps;
  }
  (void)write_private_file(dir, "summary.txt", summary);
  // What `dlaunch get` shows: the latest directory, then its verdict.
  const auto at = summary.find("\nverdict:\n");
  (void)write_private_file(s_.job_dir + "/stacks", "last.txt",
                           dir + "\n" + (at == std::string::npos ? "" : summary.substr(at + 10)));
  return dir;
}

}  // namespace dlaunch
