#include "ssh/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace dlaunch {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits a config line into words; "quoted words" keep their spaces. As in
// OpenSSH, a word that starts with # begins a comment (a # inside a word, as
// in a file name, does not).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string current;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '#' && !quoted && !any) break;
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (std::isspace(static_cast<unsigned char>(c)) || c == '=')) {
      if (any) out.push_back(current);
      current.clear();
      any = false;
    } else {
      current.push_back(c);
      any = true;
    }
  }
  if (any) out.push_back(current);
  return out;
}

}  // namespace

bool ssh_pattern_match(const std::string& pattern, const std::string& text) {
  // Iterative glob with backtracking to the last '*'.
  std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() &&
        (pattern[p] == '?' || std::tolower(static_cast<unsigned char>(pattern[p])) ==
                                  std::tolower(static_cast<unsigned char>(text[t])))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

SshConfig SshConfig::parse(const std::string& text) {
  SshConfig config;
  config.blocks_.push_back(Block{{"*"}, {}});  // settings before any Host line
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto w = words(line);
    if (w.empty()) continue;
    const std::string keyword = lower(w[0]);
    if (keyword == "host") {
      config.blocks_.push_back(Block{{w.begin() + 1, w.end()}, {}});
    } else if (keyword == "match") {
      // Match blocks need runtime conditions we do not evaluate: skip them.
      config.blocks_.push_back(Block{{}, {}});
    } else if (w.size() >= 2) {
      config.blocks_.back().settings.emplace_back(keyword, w[1]);
    }
  }
  return config;
}

SshConfig SshConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

SshHostSettings SshConfig::lookup(const std::string& alias) const {
  SshHostSettings s;
  for (const auto& block : blocks_) {
    bool matched = false, negated = false;
    for (const auto& pattern : block.patterns) {
      if (!pattern.empty() && pattern[0] == '!') {
        negated = negated || ssh_pattern_match(pattern.substr(1), alias);
      } else {
        matched = matched || ssh_pattern_match(pattern, alias);
      }
    }
    if (!matched || negated) continue;
    for (const auto& [keyword, value] : block.settings) {
      if (keyword == "hostname" && s.hostname.empty()) {
        s.hostname = value;
      } else if (keyword == "user" && s.user.empty()) {
        s.user = value;
      } else if (keyword == "port" && !s.port) {
        // OpenSSH rejects a bad port; we ignore it and keep looking.
        int port = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
        if (ec == std::errc() && end == value.data() + value.size() && port > 0 && port < 65536) {
          s.port = port;
        }
      } else if (keyword == "proxyjump" && s.proxy_jump.empty()) {
        s.proxy_jump = value;
      } else if (keyword == "identityfile") {
        s.identity_files.push_back(value);
      }
    }
  }
  // %h in HostName stands for the alias (as in "HostName %h.example.internal").
  if (const auto at = s.hostname.find("%h"); at != std::string::npos) {
    s.hostname.replace(at, 2, alias);
  }
  return s;
}

}  // namespace dlaunch
