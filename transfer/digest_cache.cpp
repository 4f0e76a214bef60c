#include "transfer/digest_cache.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/posix.h"
#include "common/private_file.h"
#include "protocol/sha256.h"

namespace dlaunch {
namespace {

std::string identity(const struct stat& st) {
  std::ostringstream out;
  out << st.st_dev << ' ' << st.st_ino << ' ' << st.st_size << ' ' << st.st_mtim.tv_sec << ' '
      << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << ' ' << st.st_ctim.tv_nsec;
  return out.str();
}

// One entry per absolute path, named by the path's digest.
std::string entry_name(const std::string& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  return to_hex(sha256(ec ? path : absolute));
}

}  // namespace

std::string digest_cache_directory() {
  const std::string base = dlaunch_cache_directory();
  return base.empty() ? std::string() : base + "/digests";
}

std::optional<std::string> cached_digest(const std::string& path, const struct stat& st) {
  if (digest_cache_directory().empty()) return std::nullopt;
  std::ifstream in(digest_cache_directory() + "/" + entry_name(path));
  std::string stored_identity;
  std::string hex;
  if (!std::getline(in, stored_identity) || !std::getline(in, hex)) return std::nullopt;
  if (stored_identity != identity(st) || hex.size() != 2 * kSha256Size) return std::nullopt;
  std::string digest;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const auto byte = std::strtoul(hex.substr(i, 2).c_str(), nullptr, 16);
    digest.push_back(static_cast<char>(byte));
  }
  if (to_hex(digest) != hex) return std::nullopt;  // not hex after all
  return digest;
}

void remember_digest(const std::string& path, const struct stat& st, const std::string& digest) {
  const std::string dir = digest_cache_directory();
  if (dir.empty()) return;  // no home: hashed again next time
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // A digest not kept is computed again next time: nothing to report.
  (void)write_private_file(dir, entry_name(path), identity(st) + "\n" + to_hex(digest) + "\n");
}

std::optional<std::string> file_digest(const std::string& path, const struct stat& st) {
  if (auto cached = cached_digest(path, st)) return cached;
  // sha256_file opens no symbolic link (the --sync manifest sends links as
  // links): here the file it names is meant.
  std::error_code ec;
  const auto real = std::filesystem::canonical(path, ec);
  if (ec) {
    errno = ec.value();
    return std::nullopt;
  }
  auto digest = sha256_file(real.string());
  if (digest) remember_digest(path, st, *digest);
  return digest;
}

}  // namespace dlaunch
