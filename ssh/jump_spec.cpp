#include "ssh/jump_spec.h"

#include <charconv>

namespace dlaunch {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool ipv6_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

// User names travel to the server, never to a shell; still, nothing that
// could split or hide a word on a terminal.
bool user_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f && c != ',' && c != '@';
}

// One hop; on error returns the reason.
std::string parse_hop(std::string_view text, JumpHop& hop) {
  if (text.empty()) return "an empty hop (two commas, or a comma at an end)";
  if (const auto at = text.rfind('@'); at != std::string_view::npos) {
    hop.user = std::string(text.substr(0, at));
    text.remove_prefix(at + 1);
    if (hop.user.empty()) return "no user before '@'";
    for (char c : hop.user) {
      if (!user_char(c)) return "user '" + hop.user + "' has a space or control character";
    }
  }
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return "'[' without ']' around an IPv6 address";
    hop.host = std::string(text.substr(1, close - 1));
    if (hop.host.empty()) return "empty [] where an IPv6 address belongs";
    // A zone index (%eth0) names an interface: any name characters after '%'.
    const auto zone = hop.host.find('%');
    for (std::size_t i = 0; i < hop.host.size(); ++i) {
      const char c = hop.host[i];
      if (zone == std::string::npos || i < zone ? !ipv6_char(c) : i > zone && !name_char(c)) {
        return "'" + hop.host + "' is not an IPv6 address";
      }
    }
    text.remove_prefix(close + 1);
    if (!text.empty() && text.front() != ':') return "text after ']' that is not ':port'";
    if (!text.empty()) port = text.substr(1);
    if (!text.empty() && port.empty()) return "no port after ':'";
  } else {
    const auto colon = text.find(':');
    hop.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      if (port.find(':') != std::string_view::npos) {
        return "write an IPv6 address in brackets: [" +
               std::string(text.substr(0, text.rfind(':'))) + "]:port";
      }
      if (port.empty()) return "no port after ':'";
    }
    if (hop.host.empty()) return "no host name";
    if (hop.host.front() == '-') return "host '" + hop.host + "' starts with '-'";
    for (char c : hop.host) {
      if (!name_char(c))
        return "host '" + hop.host + "' has a character other than A-Z a-z 0-9 . - _";
    }
  }
  if (!port.empty()) {
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      return "port '" + std::string(port) + "' is not a number from 1 to 65535";
    }
    hop.port = value;
  }
  return {};
}

}  // namespace

JumpChain parse_jump_chain(std::string_view text) {
  JumpChain chain;
  if (text == "none") return chain;
  if (text.empty()) {
    chain.error = "is empty; write user@host:port (user and port optional), or \"none\"";
    return chain;
  }
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    const auto piece =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    JumpHop hop;
    if (std::string why = parse_hop(piece, hop); !why.empty()) {
      chain.error = "hop " + std::to_string(chain.hops.size() + 1) + ": " + why;
      chain.hops.clear();
      return chain;
    }
    chain.hops.push_back(std::move(hop));
    if (chain.hops.size() > kMaxJumpHops) {
      chain.hops.clear();
      chain.error = "has more than " + std::to_string(kMaxJumpHops) + " hops";
      return chain;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return chain;
}

std::string to_string(const JumpHop& hop) {
  std::string out = hop.user.empty() ? "" : hop.user + "@";
  out += hop.host.find(':') != std::string::npos ? "[" + hop.host + "]" : hop.host;
  if (hop.port) out += ":" + std::to_string(*hop.port);
  return out;
}

}  // namespace dlaunch
