// SHA-256 through OpenSSL's EVP interface, fed in pieces: the one definition
// that `--sync`'s manifest (coordinator) and its receiver (agent) compare.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dlaunch {

inline constexpr std::size_t kSha256Size = 32;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // The 32-byte digest; the object starts over afterwards.
  std::string finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

std::string sha256(std::string_view bytes);
// The digest of a regular file's content, read in pieces; nullopt (errno set)
// when it cannot be opened or read.
std::optional<std::string> sha256_file(const std::string& path);
// Lower-case hex, for messages and tests.
std::string to_hex(std::string_view bytes);

}  // namespace dlaunch
