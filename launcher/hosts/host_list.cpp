#include "launcher/hosts/host_list.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/did_you_mean.h"

namespace dlaunch {
namespace {

constexpr std::string_view kHostfileKeys[] = {"slots", "max_slots"};
constexpr std::string_view kVisibleDevices = "CUDA_VISIBLE_DEVICES";

// A decimal count from `low` to `high`, nothing else (no sign, no spaces).
std::optional<int> parse_count(std::string_view text, int low, int high) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < low || value > high) return std::nullopt;
  return value;
}

std::string count_range(int low, int high) {
  return "a number from " + std::to_string(low) + " to " + std::to_string(high);
}

// A word of a hostfile line and its 1-based column.
struct Word {
  std::string_view text;
  int column = 0;
};

std::vector<Word> split_words(std::string_view line) {
  std::vector<Word> words;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    words.push_back({line.substr(start, i - start), static_cast<int>(start + 1)});
  }
  return words;
}

// Reads one line's words into `entry`; problems go to `diags`. Returns the
// column of a max_slots key, 0 when there is none.
int read_hostfile_line(const std::vector<Word>& words, const std::string& path, int line,
                       HostEntry& entry, std::vector<Diagnostic>& diags) {
  const auto add = [&](const Word& word, std::string message) {
    diags.push_back({path, line, word.column, std::move(message)});
  };
  const Word& host = words.front();
  if (host.text.find('=') != std::string_view::npos) {
    add(host,
        "expected a host name first, as in 'worker-1 slots=4', not " + echo_quoted(host.text));
    return 0;
  }
  // MPICH's hostfile form, `host:N` (N processes). An address with more
  // than one ':' is IPv6, and left whole.
  std::string_view name = host.text;
  std::set<std::string_view> keys;
  if (const auto colon = name.find(':');
      colon != std::string_view::npos && name.find(':', colon + 1) == std::string_view::npos) {
    const std::string_view count = name.substr(colon + 1);
    name = name.substr(0, colon);
    entry.slots = parse_count(count, 1, kMaxSlots);
    keys.insert("slots");
    if (!entry.slots) {
      add(host, "in MPICH's form host:N, N must be " + count_range(1, kMaxSlots) + ", not " +
                    echo_quoted(count));
    }
  }
  if (auto why = unsafe_word_reason(name); !why.empty()) {
    add(host, "host " + echo_quoted(name) + " " + why);
  }
  entry.name = entry.address = std::string(name);
  entry.line = line;
  int max_slots_column = 0;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const Word& word = words[i];
    const std::size_t eq = word.text.find('=');
    if (eq == std::string_view::npos) {
      add(word, echo_quoted(word.text) +
                    " is not key=value: a hostfile line is a host and then slots=N, as in "
                    "'worker-1 slots=4'");
      break;  // the rest of the line is no clearer
    }
    const std::string_view key = word.text.substr(0, eq);
    const std::string_view value = word.text.substr(eq + 1);
    if (std::ranges::find(kHostfileKeys, key) == std::end(kHostfileKeys)) {
      std::string message = "unknown key " + echo_quoted(key) +
                            ": a hostfile takes slots=N (and "
                            "max_slots=N, which is ignored)";
      if (auto suggestion = did_you_mean(key, kHostfileKeys)) {
        message += "; did you mean '" + *suggestion + "'?";
      }
      add(word, std::move(message));
      continue;
    }
    if (!keys.insert(key).second) {
      add(word, echo_quoted(key) + " is given twice for host " + echo_quoted(name));
      continue;
    }
    if (key == "slots") {
      entry.slots = parse_count(value, 1, kMaxSlots);
      if (!entry.slots) {
        add(word, "slots must be " + count_range(1, kMaxSlots) + ", not " + echo_quoted(value));
      }
    } else {
      if (!parse_count(value, 0, 1'000'000)) {
        add(word, "max_slots must be " + count_range(0, 1'000'000) + ", not " + echo_quoted(value));
      }
      max_slots_column = word.column;
    }
  }
  return max_slots_column;
}

// The first name of a filter that is not a host of `hosts` or that comes
// twice, if any.
std::optional<Diagnostic> check_filter_names(const HostsFile& hosts,
                                             const std::vector<HostFilterItem>& items,
                                             std::string_view flag) {
  std::vector<std::string_view> names;
  for (const auto& h : hosts.hosts) names.push_back(h.name);
  std::set<std::string_view> seen;
  for (const auto& item : items) {
    if (std::ranges::find(names, item.host) == names.end()) {
      std::string message = "no host " + echo_quoted(item.host) + " in " + hosts.path;
      if (auto suggestion = did_you_mean(item.host, names)) {
        message += "; did you mean '" + *suggestion + "'?";
      }
      return Diagnostic{std::string(flag), 0, 0, std::move(message)};
    }
    if (!seen.insert(item.host).second) {
      return Diagnostic{std::string(flag), 0, 0,
                        "host " + echo_quoted(item.host) + " is named twice"};
    }
  }
  return std::nullopt;
}

std::string join(const std::vector<int>& numbers) {
  std::string text;
  for (int n : numbers) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

// The ranks of `host` see only `gpus`.
std::optional<Diagnostic> restrict_gpus(HostEntry& host, const std::vector<int>& gpus,
                                        std::string_view flag) {
  if (host.env.contains(std::string(kVisibleDevices))) {
    return Diagnostic{std::string(flag), 0, 0,
                      "host " + echo_quoted(host.name) + " already sets " +
                          std::string(kVisibleDevices) + " in its env; GPU indices for it " +
                          "would replace that"};
  }
  host.slots = static_cast<int>(gpus.size());
  host.env[std::string(kVisibleDevices)] = join(gpus);
  host.visible_devices_by = std::string(flag);
  return std::nullopt;
}

// The host's GPU count as --include/--exclude read it: `gpus`, else `slots`.
std::optional<int> gpu_count(const HostEntry& host) {
  return host.gpus ? host.gpus : host.slots;
}

std::optional<Diagnostic> check_indices(const HostEntry& host, const HostFilterItem& item,
                                        std::string_view flag) {
  const auto count = gpu_count(host);
  if (!count) return std::nullopt;
  for (int gpu : item.gpus) {
    if (gpu >= *count) {
      return Diagnostic{std::string(flag), 0, 0,
                        "host " + echo_quoted(host.name) + " has " + std::to_string(*count) +
                            " GPUs (0 to " + std::to_string(*count - 1) + "), so no GPU " +
                            std::to_string(gpu)};
    }
  }
  return std::nullopt;
}

}  // namespace

HostsFileResult parse_hostfile(const std::string& text, const std::string& path) {
  std::vector<Diagnostic> diags;
  HostsFile file;
  file.path = path;
  std::map<std::string, int> first_line;
  std::vector<int> max_slots_lines;
  int line = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    ++line;
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view content = std::string_view(text).substr(start, end - start);
    start = end + 1;
    if (!content.empty() && content.back() == '\r') content.remove_suffix(1);
    if (const std::size_t hash = content.find('#'); hash != std::string_view::npos) {
      content = content.substr(0, hash);
    }
    const auto words = split_words(content);
    if (words.empty()) continue;
    HostEntry entry;
    const std::size_t errors_before = diags.size();
    if (read_hostfile_line(words, path, line, entry, diags) > 0) max_slots_lines.push_back(line);
    if (diags.size() != errors_before) continue;
    auto [it, inserted] = first_line.emplace(entry.name, line);
    if (!inserted) {
      diags.push_back({path, line, words.front().column,
                       "host " + echo_quoted(entry.name) + " is listed twice (first on line " +
                           std::to_string(it->second) + "); give each host one line"});
      continue;
    }
    file.hosts.push_back(std::move(entry));
  }
  if (!diags.empty()) return fail(std::move(diags));
  if (file.hosts.empty()) {
    return fail(std::vector<Diagnostic>{
        {path, 0, 0, "no hosts: write one line per host, as in 'worker-1 slots=4'"}});
  }
  if (!max_slots_lines.empty()) {
    std::string message = "max_slots is ignored: dlaunch starts slots=N ranks on a host";
    if (max_slots_lines.size() > 1) {
      message += " (max_slots also on line";
      message += max_slots_lines.size() > 2 ? "s" : "";
      for (std::size_t i = 1; i < max_slots_lines.size(); ++i) {
        message += (i == 1 ? " " : ", ") + std::to_string(max_slots_lines[i]);
      }
      message += ")";
    }
    file.warnings.push_back({path, max_slots_lines.front(), 0, std::move(message)});
  }
  return file;
}

HostsFileResult load_hostfile(const std::string& path) {
  auto text = read_host_list_file(path);
  if (!text) return fail(std::vector<Diagnostic>{text.error()});
  return parse_hostfile(*text, path);
}

HostsFileResult parse_host_arg(std::string_view text) {
  const std::string source = "-H";
  const auto bad = [&](std::string_view item, const std::string& why) {
    return fail(
        std::vector<Diagnostic>{{source, 0, 0, "bad host " + echo_quoted(item) + ": " + why}});
  };
  HostsFile file;
  file.path = source;
  std::set<std::string_view> seen;
  std::size_t start = 0;
  int position = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    ++position;
    if (item.empty()) {
      return fail(
          std::vector<Diagnostic>{{source, 0, 0,
                                   "empty host at position " + std::to_string(position) + " of " +
                                       echo_quoted(text) + ": write host1:4,host2:4"}});
    }
    const std::size_t colon = item.find(':');
    if (colon != std::string_view::npos && item.find(':', colon + 1) != std::string_view::npos) {
      return bad(item, "more than one ':' (IPv6 addresses go in a hosts file)");
    }
    const std::string_view host = item.substr(0, colon);
    if (auto why = unsafe_word_reason(host); !why.empty()) return bad(item, "the name " + why);
    HostEntry entry;
    entry.name = entry.address = std::string(host);
    entry.line = position;
    if (colon != std::string_view::npos) {
      entry.slots = parse_count(item.substr(colon + 1), 1, kMaxSlots);
      if (!entry.slots) return bad(item, "slots must be " + count_range(1, kMaxSlots));
    }
    if (!seen.insert(host).second) return bad(item, echo_quoted(host) + " is named twice");
    file.hosts.push_back(std::move(entry));
  }
  return file;
}

Result<std::vector<HostFilterItem>, Diagnostic> parse_host_filter(std::string_view text,
                                                                  std::string_view flag) {
  const auto bad = [&](std::string why) {
    return fail(Diagnostic{std::string(flag), 0, 0, std::move(why)});
  };
  std::vector<HostFilterItem> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t at = std::min(text.find('@', start), text.size());
    const std::string_view item = text.substr(start, at - start);
    start = at + 1;
    if (item.empty()) {
      return bad("empty host in " + echo_quoted(text) + ": write host1:0,1@host2");
    }
    const std::size_t colon = item.find(':');
    HostFilterItem parsed;
    parsed.host = std::string(item.substr(0, colon));
    if (parsed.host.empty()) return bad(echo_quoted(item) + " names no host before ':'");
    if (colon != std::string_view::npos) {
      const std::string_view list = item.substr(colon + 1);
      std::size_t from = 0;
      while (from <= list.size()) {
        const std::size_t comma = std::min(list.find(',', from), list.size());
        const std::string_view index = list.substr(from, comma - from);
        from = comma + 1;
        const auto gpu = parse_count(index, 0, kMaxSlots - 1);
        if (!gpu) {
          return bad(echo_quoted(item) + ": " + echo_quoted(index) + " is not a GPU index (" +
                     count_range(0, kMaxSlots - 1) + ")");
        }
        if (std::ranges::find(parsed.gpus, *gpu) != parsed.gpus.end()) {
          return bad(echo_quoted(item) + ": GPU " + std::to_string(*gpu) + " is named twice");
        }
        parsed.gpus.push_back(*gpu);
      }
    }
    items.push_back(std::move(parsed));
  }
  return items;
}

HostsFileResult filter_hosts(HostsFile hosts, std::string_view include, std::string_view exclude) {
  if (include.empty() && exclude.empty()) return hosts;
  if (!include.empty() && !exclude.empty()) {
    return fail(std::vector<Diagnostic>{
        {"--include", 0, 0, "cannot be combined with --exclude: give one of them"}});
  }
  const bool including = !include.empty();
  const std::string_view flag = including ? "--include" : "--exclude";
  auto parsed = parse_host_filter(including ? include : exclude, flag);
  if (!parsed) return fail(std::vector<Diagnostic>{parsed.error()});
  const auto& items = *parsed;
  if (auto error = check_filter_names(hosts, items, flag))
    return fail(std::vector<Diagnostic>{*error});

  std::vector<HostEntry> kept;
  for (HostEntry& host : hosts.hosts) {
    const auto item = std::ranges::find(items, host.name, &HostFilterItem::host);
    const bool named = item != items.end();
    if (!named) {
      if (!including) kept.push_back(std::move(host));
      continue;
    }
    if (item->gpus.empty()) {
      if (including) kept.push_back(std::move(host));
      continue;
    }
    if (auto error = check_indices(host, *item, flag)) return fail(std::vector<Diagnostic>{*error});
    std::vector<int> visible = item->gpus;
    if (!including) {
      const auto count = gpu_count(host);
      if (!count) {
        return fail(std::vector<Diagnostic>{
            {std::string(flag), 0, 0,
             "host " + echo_quoted(host.name) +
                 " has no known GPU count to exclude GPUs from: give " +
                 "it slots=N in a hostfile (or gpus = N in a hosts file)"}});
      }
      visible.clear();
      for (int gpu = 0; gpu < *count; ++gpu) {
        if (std::ranges::find(item->gpus, gpu) == item->gpus.end()) visible.push_back(gpu);
      }
      if (visible.empty()) continue;
    }
    if (auto error = restrict_gpus(host, visible, flag))
      return fail(std::vector<Diagnostic>{*error});
    kept.push_back(std::move(host));
  }
  if (kept.empty()) {
    return fail(std::vector<Diagnostic>{
        {std::string(flag), 0, 0, "leaves no host of " + hosts.path + " to run on"}});
  }
  hosts.hosts = std::move(kept);
  return hosts;
}

}  // namespace dlaunch
