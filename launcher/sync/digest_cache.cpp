#include "launcher/sync/digest_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/posix.h"
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
std::string entry_path(const std::string& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  return digest_cache_directory() + "/" + to_hex(sha256(ec ? path : absolute));
}

}  // namespace

std::string digest_cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/dlaunch/digests";
  return find_home_directory() + "/.cache/dlaunch/digests";
}

std::optional<std::string> cached_digest(const std::string& path, const struct stat& st) {
  std::ifstream in(entry_path(path));
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
  std::error_code ec;
  std::filesystem::create_directories(digest_cache_directory(), ec);
  const std::string entry = entry_path(path);
  const std::string temp = entry + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << identity(st) << '\n' << to_hex(digest) << '\n';
    if (!out) return;
  }
  if (::rename(temp.c_str(), entry.c_str()) != 0) ::unlink(temp.c_str());
}

}  // namespace dlaunch
