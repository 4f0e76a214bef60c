#include "bench/rendezvous/load_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "common/json.h"

namespace dlaunch::load {
namespace {

bool is_sum_of_ms(std::string_view name) {
  return name.ends_with("_ms");
}

void counts_json(JsonWriter& w, const Counts& c, bool allow_fractions) {
  w.begin_object();
  for (const auto& [name, value] : c.items()) {
    w.key(name);
    if (allow_fractions && is_sum_of_ms(name)) {
      w.value(value);
    } else {
      w.value(static_cast<std::int64_t>(value));
    }
  }
  w.end_object();
}

std::string summary_json(const Summary& s, bool worker) {
  JsonWriter w;
  w.begin_object();
  w.key("agents").value(s.agents);
  w.key("outcomes");
  counts_json(w, s.outcomes, false);
  w.key("stop_codes");
  counts_json(w, s.stop_codes, false);
  w.key("attempts").value(s.attempts);
  w.key("assigned");
  if (worker) {
    w.begin_array();
    for (const auto& a : s.assigned) {
      w.begin_array();
      for (auto v : a) w.value(v);
      w.end_array();
    }
    w.end_array();
  } else {
    w.value(static_cast<std::int64_t>(s.assigned.size()));
  }
  w.key("stats");
  counts_json(w, s.stats, true);
  w.key("times").begin_object();
  for (std::size_t i = 0; i < kTimeNames.size(); ++i) {
    if (s.times[i]) {
      w.key(kTimeNames[i]).value(*s.times[i]);
    } else if (worker) {
      w.key(kTimeNames[i]).null();
    }
  }
  w.end_object();
  w.key("errors").begin_array();
  for (const auto& e : s.errors) w.value(e);
  w.end_array();
  w.end_object();
  return w.text();
}

std::string escape_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string unescape_line(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      out.push_back(text[++i] == 'n' ? '\n' : text[i]);
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string format_double(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

}  // namespace

void Counts::add(std::string_view name, double amount) {
  for (auto& [n, v] : items_) {
    if (n == name) {
      v += amount;
      return;
    }
  }
  items_.emplace_back(std::string(name), amount);
}

double Counts::get(std::string_view name) const {
  for (const auto& [n, v] : items_) {
    if (n == name) return v;
  }
  return 0;
}

void Summary::note_time(std::size_t i, double t) {
  auto& slot = times[i];
  const bool first = i % 2 == 0;
  if (!slot || (first ? t < *slot : t > *slot)) slot = t;
}

std::string worker_json(const Summary& s) {
  return summary_json(s, true);
}
std::string merged_json(const Summary& s) {
  return summary_json(s, false);
}

std::string serialize(const Summary& s) {
  std::string out;
  out += "agents " + std::to_string(s.agents) + "\n";
  out += "attempts " + std::to_string(s.attempts) + "\n";
  for (const auto& [n, v] : s.outcomes.items())
    out += "outcome " + n + " " + format_double(v) + "\n";
  for (const auto& [n, v] : s.stop_codes.items())
    out += "stop_code " + n + " " + format_double(v) + "\n";
  for (const auto& [n, v] : s.stats.items()) out += "stat " + n + " " + format_double(v) + "\n";
  for (std::size_t i = 0; i < kTimeNames.size(); ++i) {
    if (s.times[i]) out += "time " + std::to_string(i) + " " + format_double(*s.times[i]) + "\n";
  }
  for (const auto& a : s.assigned) {
    out += "assigned";
    for (auto v : a) out += " " + std::to_string(v);
    out += "\n";
  }
  for (const auto& e : s.errors) out += "error " + escape_line(e) + "\n";
  out += "end\n";  // a worker that died while writing leaves no "end"
  return out;
}

std::optional<Summary> deserialize(std::string_view text) {
  Summary s;
  bool ended = false;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    if (eol == std::string_view::npos) return std::nullopt;
    const std::string line(text.substr(0, eol));
    text.remove_prefix(eol + 1);
    const auto space = line.find(' ');
    const std::string what = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    char name[256];
    double value = 0;
    if (what == "end") {
      ended = true;
    } else if (what == "agents") {
      s.agents = std::strtoll(rest.c_str(), nullptr, 10);
    } else if (what == "attempts") {
      s.attempts = std::strtoll(rest.c_str(), nullptr, 10);
    } else if (what == "outcome" || what == "stop_code" || what == "stat") {
      if (std::sscanf(rest.c_str(), "%255s %lf", name, &value) != 2) return std::nullopt;
      (what == "outcome" ? s.outcomes : what == "stat" ? s.stats : s.stop_codes).add(name, value);
    } else if (what == "time") {
      unsigned i = 0;
      if (std::sscanf(rest.c_str(), "%u %lf", &i, &value) != 2 || i >= kTimeNames.size())
        return std::nullopt;
      s.times[i] = value;
    } else if (what == "assigned") {
      std::array<std::int32_t, 5> a{};
      if (std::sscanf(rest.c_str(), "%" SCNd32 " %" SCNd32 " %" SCNd32 " %" SCNd32 " %" SCNd32,
                      &a[0], &a[1], &a[2], &a[3], &a[4]) != 5)
        return std::nullopt;
      s.assigned.push_back(a);
    } else if (what == "error") {
      s.errors.push_back(unescape_line(rest));
    } else {
      return std::nullopt;
    }
  }
  if (!ended) return std::nullopt;
  return s;
}

Summary merge(const std::vector<Summary>& parts) {
  Summary out;
  for (const auto& s : parts) {
    out.agents += s.agents;
    out.attempts += s.attempts;
    out.assigned.insert(out.assigned.end(), s.assigned.begin(), s.assigned.end());
    out.errors.insert(out.errors.end(), s.errors.begin(), s.errors.end());
    for (const auto& [n, v] : s.outcomes.items()) out.outcomes.add(n, v);
    for (const auto& [n, v] : s.stop_codes.items()) out.stop_codes.add(n, v);
    for (const auto& [n, v] : s.stats.items()) out.stats.add(n, v);
    for (std::size_t i = 0; i < kTimeNames.size(); ++i) {
      if (s.times[i]) out.note_time(i, *s.times[i]);
    }
  }
  std::sort(out.assigned.begin(), out.assigned.end());
  return out;
}

}  // namespace dlaunch::load
