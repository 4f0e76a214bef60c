#include "launcher/config/secret.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dlaunch {

std::optional<std::string> read_secret_file(const std::string& path, std::string* error,
                                            std::string* warning) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read secret file " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream content;
  content << in.rdbuf();
  std::string secret = content.str();
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back())))
    secret.pop_back();
  if (secret.empty()) {
    *error =
        "secret file " + path + " is empty (e.g. head -c 32 /dev/urandom | base64 > " + path + ")";
    return std::nullopt;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    *warning = "secret file " + path + " is readable by other users (chmod 600 " + path + ")";
  }
  return secret;
}

}  // namespace dlaunch
