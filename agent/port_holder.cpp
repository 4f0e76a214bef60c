#include "agent/port_holder.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/posix.h"

namespace dlaunch {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool holds_socket(pid_t pid, const std::vector<std::string>& links) {
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = ::opendir(fd_dir.c_str());
  if (dir == nullptr) return false;  // not ours to look into, or gone
  bool found = false;
  char target[64];
  while (const dirent* entry = ::readdir(dir)) {
    const std::string path = fd_dir + "/" + entry->d_name;
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    if (n <= 0) continue;
    if (std::ranges::find(links, std::string_view(target, static_cast<std::size_t>(n))) !=
        links.end()) {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace

std::vector<unsigned long> listening_inodes(std::string_view table, int port) {
  std::vector<unsigned long> out;
  std::istringstream lines{std::string(table)};
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode))
      continue;
    const auto colon = local.rfind(':');
    if (colon == std::string::npos || state != "0A") continue;
    int local_port = 0;
    const char* first = local.data() + colon + 1;
    const char* last = local.data() + local.size();
    const auto [end, error] = std::from_chars(first, last, local_port, 16);
    if (error == std::errc() && end == last && local_port == port && inode != 0)
      out.push_back(inode);
  }
  return out;
}

std::optional<PortHolder> port_holder(int port) {
  std::vector<std::string> links;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    for (unsigned long inode : listening_inodes(read_file(table), port))
      links.push_back("socket:[" + std::to_string(inode) + "]");
  }
  if (links.empty()) return std::nullopt;
  for (const pid_t pid : process_ids()) {
    if (!holds_socket(pid, links)) continue;
    std::string command = read_file("/proc/" + std::to_string(pid) + "/comm");
    while (!command.empty() && command.back() == '\n') command.pop_back();
    return PortHolder{pid, command};
  }
  return std::nullopt;
}

std::string describe_port_in_use(int port) {
  const auto holder = port_holder(port);
  if (!holder) return "port " + std::to_string(port) + " is in use";
  return "port " + std::to_string(port) + " is held by pid " + std::to_string(holder->pid) + " (" +
         holder->command + ")";
}

}  // namespace dlaunch
