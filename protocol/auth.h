// Job-secret authentication for the rendezvous: both sides prove they hold the
// job's secret with HMAC-SHA256 over fresh nonces from both ends, so a replayed
// transcript proves nothing and neither side can be impersonated.
#pragma once

#include <string>
#include <string_view>

namespace dlaunch::auth {

inline constexpr std::size_t kSecretSize = 32;  // 256 bits

// Cryptographically random bytes from the OS (via libcrypto's RAND_bytes).
std::string random_bytes(std::size_t n);
std::string hmac_sha256(std::string_view key, std::string_view data);
bool constant_time_equal(std::string_view a, std::string_view b);

std::string join_proof(std::string_view secret, std::string_view server_nonce,
                       std::string_view agent_nonce);
std::string welcome_proof(std::string_view secret, std::string_view server_nonce,
                          std::string_view agent_nonce);

std::string to_hex(std::string_view bytes);

}  // namespace dlaunch::auth
