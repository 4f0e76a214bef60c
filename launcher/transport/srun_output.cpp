#include "launcher/transport/srun_output.h"

#include <cctype>
#include <csignal>
#include <cstring>

namespace dlaunch {
namespace {

// Digits from `pos` as a number (at most 9 of them); advances `pos`.
std::optional<int> number_at(std::string_view text, std::size_t& pos) {
  const std::size_t start = pos;
  int value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (pos - start == 9) return std::nullopt;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == start) return std::nullopt;
  return value;
}

bool consume(std::string_view text, std::size_t& pos, std::string_view word) {
  if (text.substr(pos, word.size()) != word) return false;
  pos += word.size();
  return true;
}

// strsignal's text back to the signal number.
std::optional<int> signal_named(std::string_view name) {
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* text = ::strsignal(sig);
    if (text != nullptr && name == text) return sig;
  }
  return std::nullopt;
}

}  // namespace

SrunLine SrunOutput::split(std::string_view line) const {
  std::size_t pos = 0;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  const auto task = number_at(line, pos);
  if (task && *task < tasks_ && consume(line, pos, ": ")) {
    return {*task, std::string(line.substr(pos))};
  }
  return {-1, std::string(line)};
}

std::vector<SrunLine> SrunOutput::feed(std::string_view bytes) {
  std::vector<SrunLine> lines;
  pending_.append(bytes);
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = pending_.find('\n', start);
    if (end == std::string::npos) break;
    lines.push_back(split(std::string_view(pending_).substr(start, end + 1 - start)));
    start = end + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() >= kMaxLine) {
    lines.push_back(split(pending_));
    pending_.clear();
  }
  return lines;
}

std::vector<SrunLine> SrunOutput::finish() {
  if (pending_.empty()) return {};
  std::vector<SrunLine> lines{split(pending_)};
  pending_.clear();
  return lines;
}

std::optional<TaskExit> parse_task_exit(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::size_t pos = 0;
  if (!consume(line, pos, "srun: error: ")) return std::nullopt;
  const std::size_t node_end = line.find(": task ", pos);
  if (node_end == std::string_view::npos || node_end == pos) return std::nullopt;
  TaskExit exit;
  exit.node = std::string(line.substr(pos, node_end - pos));
  if (exit.node.find(' ') != std::string::npos) return std::nullopt;
  pos = node_end + std::strlen(": task ");
  const auto task = number_at(line, pos);
  if (!task || !consume(line, pos, ": ")) return std::nullopt;
  exit.task = *task;
  std::string_view what = line.substr(pos);
  if (consume(line, pos, "Exited with exit code ")) {
    const auto code = number_at(line, pos);
    if (!code || pos != line.size() || *code > 255) return std::nullopt;
    exit.exit_code = *code;
    return exit;
  }
  constexpr std::string_view kCore = " (core dumped)";
  if (what.ends_with(kCore)) what.remove_suffix(kCore.size());
  const auto sig = signal_named(what);
  if (!sig) return std::nullopt;
  exit.exit_code = 128 + *sig;
  return exit;
}

std::optional<std::size_t> node_of(const std::vector<std::string>& nodes, const TaskExit& exit) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == exit.node) return i;
  }
  if (exit.task >= 0 && static_cast<std::size_t>(exit.task) < nodes.size())
    return static_cast<std::size_t>(exit.task);
  return std::nullopt;
}

std::vector<int> agent_exit_codes(const std::vector<std::string>& nodes,
                                  const std::vector<TaskExit>& exits, int srun_code) {
  std::vector<int> codes(nodes.size(), 0);
  if (exits.empty()) {
    if (srun_code != 0) codes.assign(nodes.size(), srun_code);
    return codes;
  }
  for (const auto& exit : exits) {
    if (const auto index = node_of(nodes, exit)) codes[*index] = exit.exit_code;
  }
  return codes;
}

}  // namespace dlaunch
