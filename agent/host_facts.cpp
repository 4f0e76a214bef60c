#include "agent/host_facts.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/gpu_helper_process.h"
#include "common/agent_arch.h"
#include "common/captured_command.h"
#include "common/disk_space.h"
#include "common/gpu_holders.h"
#include "common/text.h"
#include "common/version.h"

extern char** environ;

namespace dlaunch {
namespace {

// An os-release value: "quoted", 'quoted' or bare, with \" \\ \$ \` escapes.
std::string unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    v = v.substr(1, v.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) ++i;
    out.push_back(v[i]);
  }
  return out;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

// NVML, through the GPU helper (the agent itself cannot load libraries): its
// lines "driver\tTEXT", "cuda\tCODE", "gpu\tTOTAL\tUSED\tUTIL\tNAME".
void nvml_facts(proto::HostFacts& facts) {
  std::string error;
  auto helper = GpuHelperProcess::start("nvml", {}, error);
  if (!helper) return;
  while (auto line = helper->read_line(std::chrono::seconds(20))) {
    const auto fields = split_helper_line(*line);
    if (fields[0] == "driver" && fields.size() >= 2) facts.driver_version = fact_text(fields[1]);
    if (fields[0] == "cuda" && fields.size() >= 2)
      facts.cuda_version = cuda_version_text(std::atoi(fields[1].c_str()));
    if (fields[0] == "gpu" && fields.size() >= 5 && facts.gpus.size() < proto::kMaxGpus) {
      proto::GpuFact gpu;
      gpu.memory_bytes = std::strtoull(fields[1].c_str(), nullptr, 10);
      gpu.memory_used_bytes = std::strtoull(fields[2].c_str(), nullptr, 10);
      gpu.utilization_pct = std::atoi(fields[3].c_str());
      gpu.name = fact_text(fields[4]);
      facts.gpus.push_back(std::move(gpu));
    }
  }
}

constexpr const char* kPythonSnippet =
    "import sys\n"
    "print(sys.version.split()[0])\n"
    "print(sys.executable)\n"
    "try:\n"
    "    import torch\n"
    "    print(torch.__version__)\n"
    "except Exception:\n"
    "    print('')\n";

// Runs `PYTHON -c SNIPPET` (a name is found on PATH). Returns its stdout;
// empty when there is no such Python, or it failed or overran `timeout`.
std::string run_python(const std::string& python, std::chrono::milliseconds timeout) {
  const auto run = run_captured({python, "-c", kPythonSnippet}, timeout, 4096);
  return run.ok() ? run.out : "";
}

}  // namespace

std::string fact_text(std::string_view text) {
  return std::string(text.substr(0, proto::kMaxFactText));
}

std::string parse_os_release(std::string_view text) {
  std::string pretty, name, version;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos || line.starts_with('#')) continue;
    const std::string key = trim(std::string_view(line).substr(0, eq));
    const std::string value = unquote(trim(std::string_view(line).substr(eq + 1)));
    if (key == "PRETTY_NAME") pretty = value;
    if (key == "NAME") name = value;
    if (key == "VERSION_ID") version = value;
  }
  if (!pretty.empty()) return fact_text(pretty);
  if (name.empty()) return "";
  return fact_text(version.empty() ? name : name + " " + version);
}

void parse_python_output(std::string_view text, std::string& python, std::string& path,
                         std::string& torch) {
  std::string* fields[] = {&python, &path, &torch};
  for (std::string* field : fields) {
    const auto newline = text.find('\n');
    *field = fact_text(trim(text.substr(0, newline)));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
}

std::string cuda_version_text(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string glibc_version_in(std::string_view libc_bytes) {
  // glibc's own banner: "... stable release version 2.36." (older: "release
  // version 2.17, by Roland McGrath et al.").
  constexpr std::string_view kMark = "release version ";
  for (auto at = libc_bytes.find(kMark); at != std::string_view::npos;
       at = libc_bytes.find(kMark, at + 1)) {
    std::string version;
    for (auto i = at + kMark.size(); i < libc_bytes.size(); ++i) {
      const char c = libc_bytes[i];
      if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') break;
      version.push_back(c);
    }
    while (!version.empty() && version.back() == '.') version.pop_back();
    if (version.find('.') != std::string::npos) return version;
  }
  return "";
}

std::string host_libc() {
  for (const char* path :
       {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6",
        "/usr/lib64/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/aarch64-linux-gnu/libc.so.6", "/lib/libc.so.6"}) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto version = glibc_version_in(bytes);
    return version.empty() ? "glibc" : "glibc " + version;
  }
  for (const char* path : {"/lib/ld-musl-x86_64.so.1", "/lib/ld-musl-aarch64.so.1"}) {
    if (::access(path, F_OK) == 0) return "musl";
  }
  return "";
}

proto::HostFacts collect_host_facts(std::chrono::milliseconds python_timeout,
                                    const std::string& python) {
  proto::HostFacts facts;
  facts.agent_version = fact_text(kVersion);
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    std::ifstream in(path);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    facts.os = parse_os_release(text.str());
    break;
  }
  utsname u{};
  if (::uname(&u) == 0) {
    facts.kernel = fact_text(u.release);
    facts.arch = fact_text(u.machine);
  }
  facts.libc = fact_text(host_libc());
  facts.agent_arch = fact_text(native_arch());
  facts.cpus = usable_cpus();
  nvml_facts(facts);
  if (!facts.gpus.empty()) {
    const auto holders = gpu_holders(dlaunch_ranks_here(), static_cast<int>(facts.gpus.size()));
    for (const auto& [index, job] : holders)
      facts.gpus[static_cast<std::size_t>(index)].held_by_job = fact_text(job);
  }
  facts.home_free = free_disk_bytes(std::getenv("HOME"));
  const char* tmp = std::getenv("TMPDIR");
  facts.tmp_free = free_disk_bytes(tmp && *tmp ? tmp : "/tmp");
  facts.shm_size = disk_size_bytes("/dev/shm");
  parse_python_output(run_python(python, python_timeout), facts.python_version, facts.python_path,
                      facts.torch_version);
  return facts;
}

}  // namespace dlaunch
