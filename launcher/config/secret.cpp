#include "launcher/config/secret.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "protocol/auth.h"
#include "ssh/shell_quote.h"

namespace dlaunch {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// A word of the printed command line: bare when a shell reads it as it is.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./:=,@+%") == std::string::npos;
  return plain ? word : shell_quote(word);
}

}  // namespace

Result<ManualSecret> read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read secret file " + path + ": " + std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  std::string secret = trimmed(content.str());
  if (secret.empty()) {
    return fail("secret file " + path + " is empty (e.g. head -c 32 /dev/urandom | base64 > " +
                path + ")");
  }
  std::string warning;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    warning = "secret file " + path + " is readable by other users (chmod 600 " + path + ")";
  return ManualSecret{secret, false, warning};
}

Result<ManualSecret> choose_manual_secret(const ManualSecretInputs& in) {
  if (!in.secret_file.empty()) return read_secret_file(in.secret_file);
  if (in.secret_env) {
    std::string secret = trimmed(*in.secret_env);
    if (secret.empty()) return fail(std::string(kSecretEnv) + " is set but empty");
    return ManualSecret{secret, false, ""};
  }
  if (in.insecure_no_secret) return ManualSecret{};
  // Alone, nobody else needs to know it; node 0 makes it and tells the others.
  if (in.nnodes <= 1 || in.node_rank == 0)
    return ManualSecret{auth::to_hex(auth::random_bytes(auth::kSecretSize)), in.nnodes > 1, ""};
  return fail(
      (in.node_rank < 0 ? std::string("this node") : "node " + std::to_string(in.node_rank)) +
      " needs the job's secret: start it with the DLAUNCH_SECRET=... line that node 0 "
      "printed, or give every node the same --secret-file FILE (or DLAUNCH_SECRET_FILE); "
      "--insecure-no-secret on every node runs the job open to any host that reaches the "
      "rendezvous port");
}

std::string other_nodes_command(const std::vector<std::string>& argv, const std::string& secret) {
  std::string out = std::string(kSecretEnv) + "=" + shell_word(secret);
  bool rank_value_next = false;
  bool after_separator = false;  // the program's own arguments are left as they are
  for (const auto& word : argv) {
    std::string shown = shell_word(word);
    if (rank_value_next) {
      shown = "<N>";
      rank_value_next = false;
    } else if (!after_separator) {
      if (word == "--") {
        after_separator = true;
      } else if (word == "--node-rank" || word == "--node_rank" || word == "--rank") {
        rank_value_next = true;
      } else {
        for (const char* flag : {"--node-rank=", "--node_rank=", "--rank="}) {
          if (word.rfind(flag, 0) == 0) shown = std::string(flag) + "<N>";
        }
      }
    }
    out += " " + shown;
  }
  return out;
}

}  // namespace dlaunch
