#include "launcher/hosts/slurm_hosts.h"

#include <cstdint>
#include <optional>
#include <set>

namespace dlaunch {
namespace {

// 18 digits always fit in 64 bits, so no number needs an overflow check.
constexpr std::size_t kMaxDigits = 18;

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// One number or range of a bracket group; width is the low end's digit count.
struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::size_t width = 0;
};

// A name's pieces: literal text between groups, and the groups.
// text[0] group[0] text[1] group[1] ... text[n]
struct Pattern {
  std::vector<std::string> text;
  std::vector<std::vector<Range>> groups;
};

std::optional<std::uint64_t> parse_number(std::string_view digits) {
  if (digits.empty() || digits.size() > kMaxDigits) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : digits) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

// The ranges of one group's inside ("01-04,07"), or the reason it is not one.
std::string parse_group(std::string_view inside, std::vector<Range>& ranges) {
  if (inside.empty()) return "'[]' is an empty group";
  std::size_t start = 0;
  while (start <= inside.size()) {
    const std::size_t comma = std::min(inside.find(',', start), inside.size());
    const std::string_view item = inside.substr(start, comma - start);
    const std::string shown = "'" + std::string(item) + "' in [" + std::string(inside) + "]";
    if (item.empty()) return "an empty range in [" + std::string(inside) + "]";
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    for (char c : item) {
      if (!is_digit(c) && c != '-') {
        return shown + " is not a number or range (only digits, '-' and ',' go in brackets)";
      }
    }
    const auto lo = parse_number(lo_text);
    const auto hi = parse_number(hi_text);
    if (!lo || !hi) {
      return shown + " is not a number or a range like 01-04 (at most " +
             std::to_string(kMaxDigits) + " digits each)";
    }
    if (*hi < *lo) return "the range " + shown + " ends below its start";
    ranges.push_back({*lo, *hi, lo_text.size()});
    start = comma + 1;
  }
  return {};
}

// How many names a group gives, saturating at `limit + 1`.
std::uint64_t group_size(const std::vector<Range>& group, std::uint64_t limit) {
  std::uint64_t total = 0;
  for (const Range& r : group) {
    const std::uint64_t n = r.hi - r.lo + 1;  // no overflow: hi < 10^18
    if (n > limit || total > limit - n) return limit + 1;
    total += n;
  }
  return total;
}

std::string padded(std::uint64_t value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Every name of `pattern`, the first group outermost.
void expand(const Pattern& pattern, std::size_t group, std::string& name,
            std::vector<std::string>& out) {
  name += pattern.text[group];
  if (group == pattern.groups.size()) {
    out.push_back(name);
  } else {
    for (const Range& r : pattern.groups[group]) {
      for (std::uint64_t v = r.lo;; ++v) {
        const std::size_t mark = name.size();
        name += padded(v, r.width);
        expand(pattern, group + 1, name, out);
        name.resize(mark);
        if (v == r.hi) break;
      }
    }
  }
  name.resize(name.size() - pattern.text[group].size());
}

// One item of the list (no separator outside brackets) as a pattern, or the
// reason it is not one; `offset` is where the item starts, for messages.
std::string parse_pattern(std::string_view item, std::size_t offset, Pattern& pattern) {
  pattern.text.emplace_back();
  for (std::size_t i = 0; i < item.size(); ++i) {
    const char c = item[i];
    if (c == ']') {
      return "']' at position " + std::to_string(offset + i + 1) + " has no '['";
    }
    if (c != '[') {
      pattern.text.back().push_back(c);
      continue;
    }
    const std::size_t close = item.find_first_of("[]", i + 1);
    if (close == std::string_view::npos) {
      return "'[' at position " + std::to_string(offset + i + 1) + " has no ']'";
    }
    if (item[close] == '[') {
      return "'[' at position " + std::to_string(offset + close + 1) +
             " is inside brackets (groups do not nest)";
    }
    std::vector<Range> ranges;
    if (auto why = parse_group(item.substr(i + 1, close - i - 1), ranges); !why.empty()) {
      return why;
    }
    pattern.groups.push_back(std::move(ranges));
    pattern.text.emplace_back();
    i = close;
  }
  return {};
}

std::string too_many(std::size_t max_hosts) {
  return "names more than " + std::to_string(max_hosts) + " hosts";
}

}  // namespace

HostlistExpansion expand_hostlist(std::string_view text, std::size_t max_hosts) {
  HostlistExpansion result;
  const auto fail = [&](std::string why) {
    result.hosts.clear();
    result.error = std::move(why);
    return result;
  };
  std::vector<Pattern> patterns;
  std::uint64_t total = 0;
  std::size_t pos = 0;
  std::size_t items = 0;
  bool comma_last = false;  // the last separator was a comma, and no item has followed it
  const auto empty_item = [&] {
    return fail("empty host at position " + std::to_string(items + 1) +
                " (two commas with no host between them, or one at either end)");
  };
  while (pos < text.size()) {
    if (is_separator(text[pos])) {
      if (text[pos] == ',') {
        if (comma_last || items == 0) return empty_item();
        comma_last = true;
      }
      ++pos;
      continue;
    }
    comma_last = false;
    ++items;
    // An item runs to the next separator outside brackets.
    std::size_t end = pos;
    bool inside = false;
    while (end < text.size() && (inside || !is_separator(text[end]))) {
      if (text[end] == '[') inside = true;
      if (text[end] == ']') inside = false;
      if (inside && text[end] != ',' && is_separator(text[end])) break;
      ++end;
    }
    Pattern pattern;
    if (auto why = parse_pattern(text.substr(pos, end - pos), pos, pattern); !why.empty()) {
      return fail(why);
    }
    std::uint64_t count = 1;
    for (const auto& group : pattern.groups) {
      const std::uint64_t n = group_size(group, max_hosts);
      if (n > max_hosts || count > max_hosts / n) return fail(too_many(max_hosts));
      count *= n;
    }
    total += count;
    if (total > max_hosts) return fail(too_many(max_hosts));
    patterns.push_back(std::move(pattern));
    pos = end;
  }
  if (comma_last) return empty_item();
  if (patterns.empty()) return fail("names no host");
  result.hosts.reserve(total);
  std::string name;
  for (const auto& pattern : patterns) expand(pattern, 0, name, result.hosts);
  for (const auto& host : result.hosts) {
    if (auto why = unsafe_word_reason(host); !why.empty()) {
      return fail("the host name " + echo_quoted(host) + " " + why);
    }
  }
  return result;
}

TaskCounts expand_tasks_per_node(std::string_view text, std::size_t max_nodes) {
  TaskCounts result;
  const auto fail = [&](std::string why) {
    result.counts.clear();
    result.error = std::move(why);
    return result;
  };
  if (text.empty()) return fail("is empty");
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::string bad = "'" + std::string(item) + "' is not a count like 2 or 2(x3)";
    std::string_view count_text = item;
    std::uint64_t repeat = 1;
    if (const std::size_t paren = item.find('('); paren != std::string_view::npos) {
      count_text = item.substr(0, paren);
      const std::string_view rest = item.substr(paren);
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')') return fail(bad);
      const auto times = parse_number(rest.substr(2, rest.size() - 3));
      if (!times || *times < 1) return fail(bad);
      repeat = *times;
    }
    const auto count = parse_number(count_text);
    if (!count) return fail(bad);
    if (*count < 1 || *count > static_cast<std::uint64_t>(kMaxSlots)) {
      return fail("'" + std::string(item) + "': each count must be from 1 to " +
                  std::to_string(kMaxSlots));
    }
    if (repeat > max_nodes - result.counts.size()) {
      return fail("counts more than " + std::to_string(max_nodes) + " nodes");
    }
    result.counts.insert(result.counts.end(), repeat, static_cast<int>(*count));
    start = comma + 1;
  }
  return result;
}

HostsFileResult slurm_hosts(const Environment& env) {
  const auto get = [&](std::string_view name) -> const std::string* {
    const auto it = env.find(std::string(name));
    return it == env.end() || it->second.empty() ? nullptr : &it->second;
  };
  const auto error = [](std::string_view variable, std::string message) {
    return fail(std::vector<Diagnostic>{{std::string(variable), 0, 0, std::move(message)}});
  };
  constexpr std::string_view kNodelist = "SLURM_JOB_NODELIST";
  const std::string* nodelist = get(kNodelist);
  if (nodelist == nullptr) {
    return error(kNodelist,
                 "is not set: hosts from Slurm need a Slurm job's environment (inside sbatch or "
                 "salloc)");
  }
  const HostlistExpansion nodes = expand_hostlist(*nodelist);
  if (!nodes.error.empty()) {
    return error(kNodelist, echo_quoted(*nodelist) + " is not a hostlist: " + nodes.error);
  }
  std::set<std::string_view> seen;
  for (const auto& node : nodes.hosts) {
    if (!seen.insert(node).second) {
      return error(kNodelist, echo_quoted(*nodelist) + " names " + echo_quoted(node) + " twice");
    }
  }

  // One count per node, or one for all; empty when no variable gives one.
  std::vector<int> slots;
  const auto per_node = [&](std::string_view variable, bool one_for_all) -> std::string {
    const std::string& text = *get(variable);
    TaskCounts counts = expand_tasks_per_node(text);
    if (!counts.error.empty()) return echo_quoted(text) + ": " + counts.error;
    if (one_for_all && counts.counts.size() == 1)
      counts.counts.resize(nodes.hosts.size(), counts.counts[0]);
    if (counts.counts.size() != nodes.hosts.size()) {
      return echo_quoted(text) + " gives counts for " + std::to_string(counts.counts.size()) +
             " nodes, but " + std::string(kNodelist) + " names " +
             std::to_string(nodes.hosts.size());
    }
    slots = std::move(counts.counts);
    return {};
  };
  // The batch host's GPU count, taken for every node's (an allocation's nodes
  // are alike more often than not; a hosts file says otherwise).
  std::optional<int> gpus;
  if (const std::string* text = get("SLURM_GPUS_ON_NODE")) {
    const auto n = parse_number(*text);
    if (!n || *n > static_cast<std::uint64_t>(kMaxSlots)) {
      return error("SLURM_GPUS_ON_NODE", echo_quoted(*text) + " is not a GPU count from 0 to " +
                                             std::to_string(kMaxSlots));
    }
    gpus = static_cast<int>(*n);
  }
  if (get("SLURM_NTASKS_PER_NODE") != nullptr) {
    if (auto why = per_node("SLURM_NTASKS_PER_NODE", true); !why.empty())
      return error("SLURM_NTASKS_PER_NODE", why);
  } else if (gpus > 0) {
    slots.assign(nodes.hosts.size(), *gpus);
  }
  if (slots.empty() && get("SLURM_TASKS_PER_NODE") != nullptr) {
    if (auto why = per_node("SLURM_TASKS_PER_NODE", false); !why.empty())
      return error("SLURM_TASKS_PER_NODE", why);
  }

  HostsFile file;
  file.path = std::string(kNodelist);
  file.hosts.reserve(nodes.hosts.size());
  for (std::size_t i = 0; i < nodes.hosts.size(); ++i) {
    HostEntry entry;
    entry.name = nodes.hosts[i];
    entry.address = nodes.hosts[i];
    if (!slots.empty()) entry.slots = slots[i];
    entry.gpus = gpus;
    entry.line = static_cast<int>(i + 1);
    // Even the batch host: its agent runs under srun too, where Slurm's
    // accounting, cgroups and scancel reach its ranks.
    entry.transport = TransportKind::slurm;
    file.hosts.push_back(std::move(entry));
  }
  return file;
}

}  // namespace dlaunch
