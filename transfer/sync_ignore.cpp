#include "transfer/sync_ignore.h"

#include <fnmatch.h>

namespace dlaunch {
namespace {

template <class Out>
std::vector<Out> split_slash(std::string_view s) {
  std::vector<Out> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto slash = s.find('/', start);
    const auto end = slash == std::string_view::npos ? s.size() : slash;
    if (end > start) parts.emplace_back(s.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

bool match_from(const std::vector<std::string>& pattern, std::size_t p,
                const std::vector<std::string_view>& path, std::size_t i) {
  for (; p < pattern.size(); ++p, ++i) {
    if (pattern[p] == "**") {
      // Any number of components, none included.
      for (std::size_t k = i; k <= path.size(); ++k)
        if (match_from(pattern, p + 1, path, k)) return true;
      return false;
    }
    if (i >= path.size()) return false;
    const std::string component(path[i]);
    if (::fnmatch(pattern[p].c_str(), component.c_str(), 0) != 0) return false;
  }
  return i == path.size();
}

}  // namespace

bool glob_path_match(const std::vector<std::string>& pattern,
                     const std::vector<std::string_view>& path) {
  return match_from(pattern, 0, path, 0);
}

IgnoreRules IgnoreRules::parse(std::string_view text) {
  IgnoreRules rules;
  rules.add(".git");
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    rules.add(line);
  }
  return rules;
}

IgnoreRules IgnoreRules::from_lines(const std::vector<std::string>& lines) {
  IgnoreRules rules;
  // .git is kept whatever the peer sent.
  if (lines.empty() || lines.front() != ".git") rules.add(".git");
  for (const auto& l : lines) rules.add(l);
  return rules;
}

void IgnoreRules::add(std::string_view line) {
  Rule rule;
  std::string_view p = line;
  if (!p.empty() && p.front() == '!') {
    rule.negate = true;
    p.remove_prefix(1);
  } else if (p.size() > 1 && p.front() == '\\' && (p[1] == '#' || p[1] == '!')) {
    p.remove_prefix(1);
  }
  if (!p.empty() && p.back() == '/') {
    rule.dir_only = true;
    while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  }
  if (p.empty()) return;
  // Anchored when a '/' is left at the start or inside; otherwise a name at any depth.
  const bool anchored = p.find('/') != std::string_view::npos;
  rule.segments = split_slash<std::string>(p);
  if (rule.segments.empty()) return;
  if (!anchored) rule.segments.insert(rule.segments.begin(), "**");
  lines_.emplace_back(line);
  rules_.push_back(std::move(rule));
}

bool IgnoreRules::ignored(std::string_view path, bool is_dir) const {
  const auto parts = split_slash<std::string_view>(path);
  bool result = false;
  for (const auto& rule : rules_) {
    if (rule.dir_only && !is_dir) continue;
    if (rule.negate != result) continue;  // cannot change the outcome
    if (glob_path_match(rule.segments, parts)) result = !rule.negate;
  }
  return result;
}

}  // namespace dlaunch
