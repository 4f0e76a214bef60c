#include "launcher/hang/stack_groups.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "common/text.h"
#include "common/utf8.h"

namespace dlaunch {
namespace {

// A line that names a frame in one of the dump formats the agents send.
bool is_frame(std::string_view line) {
  static const std::regex py_spy_frame("\\s+\\S+ \\(.+:[0-9]+\\)\\s*");
  const std::string t = trim(line);
  return t.starts_with("File \"") || t.starts_with("#") || t.starts_with("Thread ") ||
         t.starts_with("Current thread") || t.starts_with("TID ") ||
         std::regex_match(std::string(line), py_spy_frame);
}

bool starts_thread(std::string_view t) {
  return t.starts_with("Thread ") || t.starts_with("Current thread") || t.starts_with("TID ");
}

std::string normalize(std::string line) {
  static const std::regex hex("0x[0-9a-fA-F]+");
  static const std::regex ids("\\b(Thread|TID|PID|LWP|pid|Process) [0-9]+\\b");
  // gdb's and eu-stack's "#3  0x7f.. in ncclGroupEnd (comm=0x55.., rank=2) at x.cc:9":
  // the function is what two ranks share; arguments and addresses are not.
  static const std::regex native(
      "#([0-9]+)\\s+(?:0x[0-9a-fA-F]+ in |0x[0-9a-fA-F]+ )?([^\\s(]+).*");
  std::smatch m;
  std::string trimmed = trim(line);
  // C++'s "ns::(anonymous namespace)::f" holds a parenthesis before the name.
  for (std::size_t at; (at = trimmed.find("(anonymous namespace)")) != std::string::npos;)
    trimmed.replace(at, 21, "{anonymous}");
  if (std::regex_match(trimmed, m, native)) return "#" + m[1].str() + " " + m[2].str();
  line = std::regex_replace(line, hex, "0x?");
  line = std::regex_replace(line, ids, "$1 ?");
  line = trim(line);
  if (line.starts_with("Current thread"))
    line = "Thread" + line.substr(std::string("Current thread").size());
  return line;
}

}  // namespace

std::string stack_signature(std::string_view dump) {
  // Threads as blocks, each its frames, then the blocks sorted: which thread
  // took the signal, and the order threads are listed in, differ by process.
  // A native dump keeps its main thread's block alone: a rank's helper
  // threads (rank 0's TCPStore server, NCCL's proxies) differ by rank while
  // the main threads wait in the same collective.
  static const std::regex gdb_main("\\s*Thread 1 \\(.*");
  static const std::regex eu_process("\\s*PID ([0-9]+) .*");
  std::vector<std::string> blocks;
  std::string block;
  std::string main_block;
  std::string main_tid;
  bool in_main = false;
  auto close_block = [&] {
    if (in_main) main_block = block;
    if (!block.empty()) blocks.push_back(std::move(block));
    block.clear();
  };
  for (const auto& raw : split_lines(std::string(dump))) {
    std::smatch m;
    if (std::regex_match(raw, m, eu_process)) main_tid = m[1].str();
    if (!is_frame(raw)) continue;
    const std::string t = trim(raw);
    if (starts_thread(t)) {
      close_block();
      in_main =
          std::regex_match(raw, gdb_main) || (!main_tid.empty() && t == "TID " + main_tid + ":");
    }
    block += normalize(raw) + "\n";
  }
  close_block();
  if (!main_block.empty()) return main_block;
  std::sort(blocks.begin(), blocks.end());
  std::string out;
  for (const auto& b : blocks) out += b;
  return out;
}

std::vector<StackGroup> group_stacks(const std::vector<RankStack>& stacks) {
  std::map<std::string, StackGroup> by_key;
  std::map<std::string, std::set<std::string>> states;
  for (const auto& s : stacks) {
    const std::string frames = s.answered ? stack_signature(s.report.text) : std::string();
    // No report, and no stack (stopped, no tool) are groups of their own.
    const std::string key = (s.answered ? "1" : s.host_lost ? "L" : "0") + frames;
    auto& g = by_key[key];
    g.frames = frames;
    g.ranks.push_back(s.rank);
    states[key].insert(s.answered    ? (s.report.state.empty() ? "gone" : s.report.state)
                       : s.host_lost ? "no answer from its host"
                                     : "exited");
  }
  std::vector<StackGroup> groups;
  for (auto& [key, g] : by_key) {
    std::sort(g.ranks.begin(), g.ranks.end());
    std::string joined;
    for (const auto& st : states[key]) joined += (joined.empty() ? "" : ", ") + st;
    g.state = joined;
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const StackGroup& a, const StackGroup& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() < b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  return groups;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string format_groups(const std::vector<StackGroup>& groups) {
  std::string out;
  for (const auto& g : groups) {
    const std::size_t n = g.ranks.size();
    out += (n == 1 ? "rank " : "ranks ") + rank_ranges(g.ranks) + " (" + std::to_string(n) +
           (n == 1 ? " rank" : " ranks") + "), state " + g.state + ":\n";
    if (g.frames.empty()) out += "    (no stack)\n";
    for (const auto& line : split_lines(g.frames)) out += "    " + escape_unprintable(line) + "\n";
  }
  return out;
}

}  // namespace dlaunch
