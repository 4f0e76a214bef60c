#include "launcher/web/ui_access.h"

#include <arpa/inet.h>

#include <charconv>

#include "common/text.h"

namespace dlaunch {
namespace {

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const auto end = header.find(';');
    const std::string pair = trim(header.substr(0, end));
    const auto eq = pair.find('=');
    if (eq != std::string::npos && std::string_view(pair).substr(0, eq) == name)
      return pair.substr(eq + 1);
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return std::nullopt;
}

// "host:port", "[v6]:port", "host": the host.
std::string_view host_of(std::string_view host_header) {
  if (host_header.starts_with('[')) {
    const auto close = host_header.find(']');
    return close == std::string_view::npos ? host_header : host_header.substr(1, close - 1);
  }
  return host_header.substr(0, host_header.find(':'));
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  const std::string text(host);
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a{"127.0.0.1", kDefaultUiPort};
  std::string_view port;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos)
      return fail("--listen '" + std::string(text) + "': no ']' after the IPv6 address");
    a.host = std::string(text.substr(1, close - 1));
    const auto rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':'))
      return fail("--listen '" + std::string(text) + "': expected :PORT after ']'");
    if (!rest.empty()) port = rest.substr(1);
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon)
      return fail("--listen '" + std::string(text) + "': write an IPv6 address as [ADDR]:PORT");
    if (colon > 0) a.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  } else {
    a.host = std::string(text);
  }
  if (a.host.empty()) return fail("--listen '" + std::string(text) + "': no address");
  if (!port.empty()) {
    int value = -1;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535)
      return fail("--listen '" + std::string(text) + "': the port must be 0-65535");
    a.port = value;
  }
  return a;
}

bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

Access request_access(std::string_view token, std::string_view authorization,
                      std::string_view cookie, std::string_view query_token,
                      std::string_view host_header) {
  if (token.empty())
    return is_loopback_host(host_of(host_header)) ? Access::granted : Access::wrong_host;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.starts_with(kBearer) &&
      same_secret(trim(authorization.substr(kBearer.size())), token))
    return Access::granted;
  if (const auto c = cookie_value(cookie, kTokenCookie); c && same_secret(*c, token))
    return Access::granted;
  if (!query_token.empty() && same_secret(query_token, token)) return Access::granted;
  return Access::no_token;
}

}  // namespace dlaunch
