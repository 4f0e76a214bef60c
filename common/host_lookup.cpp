#include "common/host_lookup.h"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>

namespace dlaunch {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Splits one line into its whitespace-separated words, up to a '#'.
std::vector<std::string_view> words(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto newline = text.find('\n');
    f(text.substr(0, newline));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
}

}  // namespace

bool is_numeric_address(std::string_view text) {
  const std::string s(text);
  unsigned char buffer[16];
  return ::inet_pton(AF_INET, s.c_str(), buffer) == 1 ||
         ::inet_pton(AF_INET6, s.c_str(), buffer) == 1;
}

std::vector<std::string> lookup_in_hosts_text(std::string_view name, std::string_view hosts_text) {
  if (is_numeric_address(name)) return {std::string(name)};
  std::vector<std::string> found;
  for_each_line(hosts_text, [&](std::string_view line) {
    const auto w = words(line);
    if (w.size() < 2 || !is_numeric_address(w[0])) return;
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (!equal_ignoring_case(w[i], name)) continue;
      bool seen = false;
      for (const auto& f : found) seen = seen || f == w[0];
      if (!seen) found.emplace_back(w[0]);
      break;
    }
  });
  return found;
}

std::vector<std::string> lookup_without_nss(std::string_view name) {
  if (is_numeric_address(name)) return {std::string(name)};
  return lookup_in_hosts_text(name, read_file("/etc/hosts"));
}

std::string lookup_failure(std::string_view name) {
  return "cannot resolve " + std::string(name) +
         " here: the agent takes numeric addresses and /etc/hosts only (give the address, or a "
         "name this machine's /etc/hosts has)";
}

std::string home_from_passwd_text(unsigned uid, std::string_view passwd_text) {
  std::string home;
  for_each_line(passwd_text, [&](std::string_view line) {
    if (!home.empty()) return;
    // name:password:uid:gid:gecos:home:shell
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    for (;;) {
      const auto colon = line.find(':', start);
      fields.push_back(line.substr(start, colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    if (fields.size() >= 6 && fields[2] == std::to_string(uid)) home = std::string(fields[5]);
  });
  return home;
}

std::string home_from_passwd(unsigned uid) {
  return home_from_passwd_text(uid, read_file("/etc/passwd"));
}

}  // namespace dlaunch
