#include "protocol/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace dlaunch::auth {

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("the OS random number generator failed");
  }
  return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // An empty key is legal for HMAC; pass a non-null pointer regardless.
  static const unsigned char empty = 0;
  const void* key_ptr = key.empty() ? static_cast<const void*>(&empty) : key.data();
  if (HMAC(EVP_sha256(), key_ptr, static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest,
           &length) == nullptr) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<char*>(digest), length);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string join_proof(std::string_view secret, std::string_view server_nonce,
                       std::string_view agent_nonce) {
  std::string data = "dlaunch join v1|";
  data.append(server_nonce).append("|").append(agent_nonce);
  return hmac_sha256(secret, data);
}

std::string welcome_proof(std::string_view secret, std::string_view server_nonce,
                          std::string_view agent_nonce) {
  std::string data = "dlaunch welcome v1|";
  data.append(agent_nonce).append("|").append(server_nonce);
  return hmac_sha256(secret, data);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

}  // namespace dlaunch::auth
