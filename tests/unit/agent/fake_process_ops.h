// Process operations without processes, for RankSupervisor tests. Each "rank"
// has real pipes (so the supervisor reads output as it does in production) but
// lives and dies only as the test and the signals it receives say. A rank dies
// from SIGTERM unless it ignores it and from SIGKILL unless it is unkillable;
// leftovers are descendants outside any rank's group, as setsid daemons are.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/process_ops.h"
#include "protocol/messages.h"

namespace dlaunch::testing {

inline int exited_status(int code) {
  return (code & 0xff) << 8;
}
inline int signalled_status(int signal) {
  return signal & 0x7f;
}

class FakeProcessOps final : public ProcessOps {
 public:
  struct Process {
    bool alive = true;
    bool is_rank = false;
    bool ignores_term = false;
    bool unkillable = false;
    bool stopped = false;    // SIGSTOP: signals but SIGCONT and SIGKILL wait
    int pending_signal = 0;  // what a stopped process will act on once continued
    int out_w = -1;
    int err_w = -1;
    SpawnRequest request;
  };

  ~FakeProcessOps() override {
    for (auto& [pid, p] : processes_) close_pipes(p);
  }

  // What a real child's SIGCHLD would do: tell the supervisor to reap.
  std::function<void()> on_child_exit = [] {};
  // argv[0] of programs that cannot be started.
  std::set<std::string> unstartable;

  Result<SpawnedProcess> spawn(const SpawnRequest& request) override {
    if (unstartable.count(request.argv.at(0)) != 0)
      return fail("no such file: " + request.argv.at(0));
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return fail("pipe2 failed");
    const pid_t pid = next_pid_++;
    Process p;
    p.is_rank = true;
    p.out_w = out[1];
    p.err_w = err[1];
    p.request = request;
    processes_[pid] = std::move(p);
    spawned.push_back(pid);
    return SpawnedProcess{pid, out[0], err[0]};
  }

  void signal_group(pid_t pgid, int signal) override {
    group_signals.emplace_back(pgid, signal);
    deliver(pgid, signal);
  }

  void signal_pids(const std::vector<pid_t>& pids, int signal) override {
    for (pid_t pid : pids) {
      pid_signals.emplace_back(pid, signal);
      deliver(pid, signal);
    }
  }

  std::set<pid_t> stopped_groups() override {
    std::set<pid_t> groups;
    for (const auto& [pid, p] : processes_)
      if (p.alive && p.stopped) groups.insert(pid);  // each rank leads its group
    return groups;
  }

  std::vector<pid_t> descendants() override {
    std::vector<pid_t> out;
    for (const auto& [pid, p] : processes_) {
      if (p.alive) out.push_back(pid);
    }
    return out;
  }

  std::optional<ChildExit> reap_one() override {
    if (exits_.empty()) return std::nullopt;
    const ChildExit e = exits_.front();
    exits_.pop_front();
    return e;
  }

  // --- the test's side ---

  Process& process(pid_t pid) { return processes_.at(pid); }

  void write(pid_t pid, proto::Stream stream, std::string_view bytes) {
    const Process& p = process(pid);
    const int fd = stream == proto::Stream::err ? p.err_w : p.out_w;
    if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("short write to a fake rank's pipe");
  }

  // The rank exits; `keep_pipes_open` plays a grandchild that still holds them.
  void exit(pid_t pid, int wait_status, bool keep_pipes_open = false) {
    Process& p = process(pid);
    p.alive = false;
    if (!keep_pipes_open) close_pipes(p);
    exits_.push_back({pid, wait_status});
    on_child_exit();
  }

  // A descendant that left its rank's process group (setsid) and outlived it.
  pid_t add_leftover(bool ignores_term = false, bool unkillable = false) {
    const pid_t pid = next_pid_++;
    Process p;
    p.ignores_term = ignores_term;
    p.unkillable = unkillable;
    processes_[pid] = std::move(p);
    return pid;
  }

  bool alive(pid_t pid) { return process(pid).alive; }

  int count_signals(const std::vector<std::pair<pid_t, int>>& sent, int signal) const {
    int n = 0;
    for (const auto& [pid, s] : sent) n += s == signal ? 1 : 0;
    return n;
  }

  std::vector<pid_t> spawned;
  std::vector<std::pair<pid_t, int>> group_signals;
  std::vector<std::pair<pid_t, int>> pid_signals;

 private:
  static void close_pipes(Process& p) {
    for (int* fd : {&p.out_w, &p.err_w}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }

  void deliver(pid_t pid, int signal) {
    auto it = processes_.find(pid);
    if (it == processes_.end() || !it->second.alive) return;
    Process& p = it->second;
    if (signal == SIGCONT) {
      p.stopped = false;
      signal = std::exchange(p.pending_signal, 0);
    } else if (p.stopped && signal != SIGKILL) {
      p.pending_signal = signal;
      return;
    }
    const bool dies = (signal == SIGTERM && !p.ignores_term && !p.unkillable) ||
                      (signal == SIGKILL && !p.unkillable);
    if (dies) exit(pid, signalled_status(signal));
  }

  pid_t next_pid_ = 1000;
  std::map<pid_t, Process> processes_;
  std::deque<ChildExit> exits_;
};

}  // namespace dlaunch::testing
