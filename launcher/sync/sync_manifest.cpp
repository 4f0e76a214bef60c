#include "launcher/sync/sync_manifest.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol/sha256.h"
#include "transfer/sync_ignore.h"

namespace dlaunch {
namespace {

struct Walker {
  std::string root;
  const IgnoreRules& rules;
  bool hash;
  SyncManifest& out;
  std::string error;

  bool fail(const std::string& path, const std::string& why) {
    error = path + ": " + why;
    return false;
  }

  // `rel`: the directory relative to root ("" for root itself).
  bool walk(const std::string& rel) {
    const std::string abs =
        rel.empty() ? (root.empty() ? std::string("/") : root) : root + "/" + rel;
    DIR* d = ::opendir(abs.c_str());
    if (d == nullptr) return fail(abs, std::strerror(errno));
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string path = rel.empty() ? name : rel + "/" + name;
      const std::string full = root + "/" + path;
      struct stat st {};
      if (::lstat(full.c_str(), &st) != 0) return fail(full, std::strerror(errno));
      const bool is_dir = S_ISDIR(st.st_mode);
      if (rules.ignored(path, is_dir)) {
        ++out.ignored;
        continue;
      }
      if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        ++out.special;
        continue;
      }
      if (path.size() > proto::kMaxFilePath)
        return fail(full,
                    "the path is longer than " + std::to_string(proto::kMaxFilePath) + " bytes");
      if (out.entries.size() >= proto::kMaxSyncEntries)
        return fail(root, "more than " + std::to_string(proto::kMaxSyncEntries) +
                              " entries (list the rest in .dlaunchignore)");
      proto::SyncEntry entry;
      entry.path = path;
      entry.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
      if (S_ISLNK(st.st_mode)) {
        entry.kind = proto::SyncKind::symlink;
        entry.mode = 0;
        std::string target(proto::kMaxLinkTarget + 1, '\0');
        const ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
        if (n < 0) return fail(full, std::strerror(errno));
        if (n == 0 || static_cast<std::size_t>(n) > proto::kMaxLinkTarget)
          return fail(full, "the symbolic link's target is empty or too long");
        target.resize(static_cast<std::size_t>(n));
        entry.target = std::move(target);
        out.entries.push_back(std::move(entry));
      } else if (S_ISREG(st.st_mode)) {
        entry.kind = proto::SyncKind::file;
        entry.size = static_cast<std::uint64_t>(st.st_size);
        if (hash) {
          auto digest = sha256_file(full);
          if (!digest) return fail(full, std::strerror(errno));
          entry.sha256 = std::move(*digest);
        }
        ++out.files;
        out.bytes += entry.size;
        out.entries.push_back(std::move(entry));
      } else {
        entry.kind = proto::SyncKind::dir;
        out.entries.push_back(std::move(entry));
        if (!walk(path)) return false;
      }
    }
    return true;
  }
};

}  // namespace

Result<SyncManifest> build_sync_manifest(const std::string& dir, bool hash) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(dir, ec).lexically_normal().string();
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0) return fail("--sync " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fail("--sync " + dir + ": not a directory");
  std::string text;
  {
    std::ifstream in(abs + "/" + std::string(kIgnoreFileName), std::ios::binary);
    if (in) {
      std::ostringstream s;
      s << in.rdbuf();
      text = s.str();
    }
  }
  const IgnoreRules rules = IgnoreRules::parse(text);
  if (rules.lines().size() > proto::kMaxIgnoreLines)
    return fail(abs + "/" + std::string(kIgnoreFileName) + ": more than " +
                std::to_string(proto::kMaxIgnoreLines) + " patterns");
  for (const auto& l : rules.lines()) {
    if (l.size() > proto::kMaxFilePath)
      return fail(abs + "/" + std::string(kIgnoreFileName) + ": a pattern longer than " +
                  std::to_string(proto::kMaxFilePath) + " bytes");
  }
  SyncManifest manifest;
  manifest.root = abs;
  if (auto source = identify_directory(abs)) manifest.source = std::move(*source);
  manifest.ignore = rules.lines();
  Walker walker{abs == "/" ? std::string() : abs, rules, hash, manifest, {}};
  if (!walker.walk("")) return fail("--sync " + dir + ": " + walker.error);
  return manifest;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, units[u]);
  return text;
}

std::string describe_manifest(const SyncManifest& m) {
  std::uint64_t links = 0;
  std::uint64_t dirs = 0;
  for (const auto& e : m.entries) {
    if (e.kind == proto::SyncKind::symlink) ++links;
    if (e.kind == proto::SyncKind::dir) ++dirs;
  }
  std::string text = std::to_string(m.files) + " files, " + std::to_string(links) + " symlinks, " +
                     std::to_string(dirs) + " directories, " + human_bytes(m.bytes) + "; " +
                     std::to_string(m.ignored) + " ignored";
  if (m.special > 0) text += ", " + std::to_string(m.special) + " sockets/FIFOs/devices skipped";
  return text;
}

}  // namespace dlaunch
