#include "agent/rank_stacks.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/captured_command.h"
#include "common/posix.h"
#include "common/private_file.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kSample{300};
// torch's watchdog looks at its pipe about once a second, then dumps.
constexpr milliseconds kFlightRecordWait{4000};
constexpr std::chrono::seconds kToolTimeout{30};
constexpr milliseconds kDumpWait{3000};

// faulthandler on kStackSignal into the job's dump directory, for this
// process and every Python process it starts; then the sitecustomize this one
// hides (Debian's, a virtualenv's), if any, runs as it would have.
constexpr std::string_view kSiteCustomize = R"(# Written by dlaunch-agent for `dlaunch stacks`.
def _dlaunch_register_stack_dump():
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    directory = os.environ.get("DLAUNCH_STACKS_DIR")
    try:
        import faulthandler
        import signal
        if directory and os.path.isdir(directory):
            # The agent signals only a process whose py-PID.txt exists: it
            # appears once the handler is in place (the signal would kill
            # the process before).
            name = os.path.join(directory, "py-%d" % os.getpid())
            dump = open(name + ".part", "a")
            faulthandler.register(signal.SIGRTMIN + 6, file=dump, all_threads=True, chain=False)
            os.rename(name + ".part", name + ".txt")
            _dlaunch_register_stack_dump.dump = dump  # open for the process's life
    except Exception:
        pass
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  the one this file hid
    except ImportError:
        sys.modules["sitecustomize"] = me


_dlaunch_register_stack_dump()
)";

struct Sample {
  std::string state;
  long long ticks = -1;  // user + system
};

Sample sample(pid_t pid) {
  const auto f = proc_stat(pid);
  if (f.size() < 15) return {};
  return {f[2], std::atoll(f[13].c_str()) + std::atoll(f[14].c_str())};
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// One line per thread: its id, name, state and wchan.
std::string threads_of(pid_t pid) {
  std::string out;
  std::error_code ec;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    const std::string dir = entry.path().string();
    const std::string stat = read_first_line(dir + "/stat");
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size())
      continue;
    const std::string wchan = read_first_line(dir + "/wchan");
    out += "  thread " + entry.path().filename().string() + " (" +
           stat.substr(open + 1, close - open - 1) + ") " + stat.substr(close + 2, 1) +
           (wchan.empty() || wchan == "0" ? "" : " " + wchan) + "\n";
  }
  return out;
}

long long size_of_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
}

// The rank's own process, or the first of its descendants, that registered
// the dump (a shell or launcher in front of Python); -1 when none did.
pid_t python_process(pid_t pid, const std::string& dumps, std::string& file) {
  if (dumps.empty()) return -1;
  auto registered = [&](pid_t p) {
    file = dumps + "/py-" + std::to_string(p) + ".txt";
    return size_of_file(file) >= 0;
  };
  if (registered(pid)) return pid;
  for (pid_t p : descendants_of(pid))
    if (registered(p)) return p;
  return -1;
}

// Signals the process and reads what faulthandler appends: complete once the
// file has grown and then stayed the same for a moment.
std::string python_dump(pid_t pid, const std::string& file) {
  const long long before = size_of_file(file);
  if (before < 0 || ::kill(pid, stack_signal()) != 0) return {};
  const auto deadline = std::chrono::steady_clock::now() + kDumpWait;
  long long last = before;
  auto steady_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
    const long long now = size_of_file(file);
    if (now != last) {
      last = now;
      steady_since = std::chrono::steady_clock::now();
    } else if (now > before &&
               std::chrono::steady_clock::now() - steady_since >= milliseconds(100)) {
      break;
    }
  }
  std::ifstream in(file, std::ios::binary);
  in.seekg(before);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tool_output(const std::vector<std::string>& argv) {
  const auto run = run_captured(argv, kToolTimeout, proto::kMaxStackText);
  if (run.timed_out)
    return argv[0] + ": no answer in " + std::to_string(kToolTimeout.count()) + " s\n";
  if (!run.ok() && run.out.empty()) return argv[0] + ": " + run.err;
  return run.out;
}

bool stopped(const std::string& state) {
  return state == "T" || state == "t";
}

}  // namespace

int stack_signal() {
  return SIGRTMIN + 6;
}

StackTools StackTools::on_this_host() {
  return {find_on_path("py-spy"), find_on_path("eu-stack"), find_on_path("gdb")};
}

proto::StacksReport take_rank_stack(const RankToInspect& rank, const StackTools& tools) {
  proto::StacksReport r;
  r.rank = rank.rank;
  r.silent_ms = rank.silent_ms;
  const Sample first = sample(rank.pid);
  if (first.ticks < 0) return r;  // gone: no state
  // First, so that torch's watchdog dumps while the rest is taken. Not a
  // stopped rank: its watchdog cannot answer (a dump a timeout left is still
  // carried).
  const auto flight_asked =
      stopped(first.state) ? FlightRecordAsked{} : ask_flight_record(rank.flight, rank.rank);
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(kSample);
  const Sample second = sample(rank.pid);
  r.sampled_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started).count();
  r.state = second.ticks >= 0 ? second.state : first.state;
  const long ticks_per_s = ::sysconf(_SC_CLK_TCK);
  if (second.ticks >= first.ticks && ticks_per_s > 0)
    r.cpu_ms = (second.ticks - first.ticks) * 1000 / ticks_per_s;
  r.wchan = read_first_line("/proc/" + std::to_string(rank.pid) + "/wchan");
  if (r.wchan == "0") r.wchan.clear();
  std::string text = "threads:\n" + threads_of(rank.pid);
  if (stopped(r.state)) {
    text += "\nstopped (state " + r.state + "): no stack taken, which would mean continuing it\n";
  } else if (r.state != "Z") {
    std::string file;
    const pid_t python = python_process(rank.pid, rank.python_dumps, file);
    std::string dump = python > 0 ? python_dump(python, file) : std::string();
    if (!dump.empty()) {
      r.tools = "faulthandler";
      text += "\nPython stacks (faulthandler, pid " + std::to_string(python) + "):\n" + dump;
    }
    if (!tools.py_spy.empty() && python > 0) {
      r.tools += r.tools.empty() ? "py-spy" : ", py-spy";
      text += "\npy-spy dump --native:\n" +
              tool_output({tools.py_spy, "dump", "--native", "--pid", std::to_string(python)});
    } else if (dump.empty() && !tools.eu_stack.empty()) {
      r.tools = "eu-stack";
      text += "\nnative stacks (eu-stack):\n" +
              tool_output({tools.eu_stack, "-p", std::to_string(rank.pid)});
    } else if (dump.empty() && !tools.gdb.empty()) {
      r.tools = "gdb";
      text += "\nnative stacks (gdb):\n" +
              tool_output({tools.gdb, "-p", std::to_string(rank.pid), "-batch", "-nx", "-q", "-ex",
                           "set pagination off", "-ex", "thread apply all bt"});
    } else if (dump.empty()) {
      text +=
          "\nno stack: not a Python rank that loaded dlaunch's hook, and neither eu-stack nor "
          "gdb is on this host's PATH\n";
    }
  }
  auto flight = collect_flight_record(rank.flight, rank.rank, flight_asked, kFlightRecordWait);
  if (!flight.note.empty()) text += "\n" + flight.note + "\n";
  r.flight_record = std::move(flight.bytes);
  if (text.size() > proto::kMaxStackText) {
    const std::string cut = "\n... (cut at " + std::to_string(proto::kMaxStackText) + " bytes)\n";
    text = text.substr(0, proto::kMaxStackText - cut.size()) + cut;
  }
  r.text = std::move(text);
  return r;
}

Result<PythonStackHook> make_python_stack_hook() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dlaunch-stacks-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    return fail("cannot create a directory for the ranks' stack dumps under " + pattern);
  PythonStackHook hook{pattern, pattern + "/python"};
  std::error_code ec;
  std::filesystem::create_directory(hook.python_path, ec);
  if (ec || !write_private_file(hook.python_path, "sitecustomize.py", std::string(kSiteCustomize)))
    return fail("cannot write " + hook.python_path + "/sitecustomize.py");
  return hook;
}

void remove_python_stack_hook(const PythonStackHook& hook) {
  std::error_code ec;
  std::filesystem::remove_all(hook.directory, ec);
}

}  // namespace dlaunch
