#include "common/directory_overlap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace dlaunch {
namespace {

struct Node {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const Node&) const = default;
};

Node node_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// Whether `target` is `start` or one of its ancestors, climbing through ".."
// (which crosses mount points and resolves links the way the kernel does)
// until the root, whose ".." is itself.
bool climbs_to(const std::string& start, const Node& target) {
  int fd = ::open(start.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool found = false;
  for (int depth = 0; depth < 4096; ++depth) {  // a bound against a looping file system
    struct stat st {};
    if (::fstat(fd, &st) != 0) break;
    const Node here = node_of(st);
    if (here == target) {
      found = true;
      break;
    }
    const int parent = ::openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat pst {};
    const bool at_root = parent < 0 || ::fstat(parent, &pst) != 0 || node_of(pst) == here;
    ::close(fd);
    fd = parent;
    if (at_root) break;
  }
  if (fd >= 0) ::close(fd);
  return found;
}

}  // namespace

std::string machine_identity() {
  auto first_line = [](const char* path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    return line.substr(0, 60);
  };
  const std::string machine = first_line("/etc/machine-id");
  const std::string boot = first_line("/proc/sys/kernel/random/boot_id");
  if (machine.empty() && boot.empty()) return {};
  return machine + "/" + boot;
}

Result<DirectoryIdentity> identify_directory(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fail(path + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fail(path + ": not a directory");
  const Node node = node_of(st);
  return DirectoryIdentity{machine_identity(), path, node.device, node.inode};
}

Overlap directory_overlap(const DirectoryIdentity& source, const std::string& dest) {
  // An unknown machine (no machine-id, no boot id) never matches: a false
  // refusal on another machine would stop a job that is safe.
  if (source.machine.empty() || source.machine != machine_identity()) return Overlap::none;
  struct stat here {};
  if (::stat(source.path.c_str(), &here) != 0) return Overlap::none;
  const Node source_node{source.device, source.inode};
  if (node_of(here) != source_node) return Overlap::none;
  struct stat dest_st {};
  if (::stat(dest.c_str(), &dest_st) != 0) return Overlap::none;
  const Node dest_node = node_of(dest_st);
  if (dest_node == source_node) return Overlap::same;
  if (climbs_to(dest, source_node)) return Overlap::dest_inside_source;
  if (climbs_to(source.path, dest_node)) return Overlap::source_inside_dest;
  return Overlap::none;
}

std::string describe_overlap(Overlap overlap, const std::string& source, const std::string& dest) {
  const std::string fix =
      "; refused (choose a --workdir outside " + source + ", and not one that holds it)";
  switch (overlap) {
    case Overlap::none:
      return {};
    case Overlap::same:
      return "--sync " + source + " would be written into itself (" + dest + ")" + fix;
    case Overlap::dest_inside_source:
      return "--sync " + source + " would be written into " + dest +
             ", which lies inside it: each run would copy the last one" + fix;
    case Overlap::source_inside_dest:
      return "--sync " + source + " would be written into " + dest +
             ", which holds it: --sync-delete there would delete the source itself" + fix;
  }
  return {};
}

}  // namespace dlaunch
