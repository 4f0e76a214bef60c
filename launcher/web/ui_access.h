// Who may read `dlaunch ui`: the rules, pure so that they are unit-tested.
// - Loopback by default. Another address needs a token (--token-file), or the
//   server refuses to start.
// - With a token, every request carries it: "Authorization: Bearer TOKEN", or
//   the cookie a browser got by opening a URL with ?token=TOKEN once;
//   anything else is answered 401.
// - Without a token (loopback), the Host header must name a loopback host, so
//   that a web page elsewhere cannot read the jobs through DNS rebinding.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace dlaunch {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0"
  int port = 0;      // 0: any free port
};

inline constexpr int kDefaultUiPort = 8697;
inline constexpr std::string_view kTokenCookie = "dlaunch_token";

// "ADDR:PORT", "[V6]:PORT", "ADDR" (the default port) or ":PORT" (loopback).
Result<ListenAddress> parse_listen_address(std::string_view text);
bool is_loopback_host(std::string_view host);

enum class Access { granted, no_token, wrong_host };

// A request's access from its Authorization and Cookie headers, its ?token=
// parameter and its Host header; `token` empty: loopback without one.
Access request_access(std::string_view token, std::string_view authorization,
                      std::string_view cookie, std::string_view query_token,
                      std::string_view host_header);

// Equal in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b);

}  // namespace dlaunch
