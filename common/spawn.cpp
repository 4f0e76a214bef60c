#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/posix.h"

extern char** environ;

namespace dlaunch {

Result<pid_t> spawn_child(const ChildSpawn& spawn) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Every dup before any open: an open on 0, 1 or 2 would otherwise replace a
  // descriptor that a later dup still reads (a parent started with them closed
  // gets its pipes there).
  for (int fd = 0; fd < 3; ++fd) {
    if (spawn.stdio[fd] >= 0) posix_spawn_file_actions_adddup2(&actions, spawn.stdio[fd], fd);
  }
  for (int fd = 0; fd < 3; ++fd) {
    if (spawn.stdio[fd] < 0)
      posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spawn.own_process_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  std::vector<std::string> args = spawn.argv, env = spawn.env;
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      spawn.search_path
          ? ::posix_spawnp(&pid, spawn.program.c_str(), &actions, &attr, argv.data(), envp.data())
          : ::posix_spawn(&pid, spawn.program.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) return fail(std::string(std::strerror(spawned)));
  return pid;
}

Result<pid_t> fork_exec_child(const ForkedChild& child) {
  // Everything the child needs, made before the fork: another thread may hold
  // the allocator's lock at the fork, and the child would wait for it forever.
  std::vector<std::string> args = child.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_entries;
  std::vector<char*> envp;
  if (!child.extra_env.empty()) {
    env_entries = environment_with(child.extra_env);
    for (auto& e : env_entries) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  char** const env = envp.empty() ? environ : envp.data();
  const pid_t pid = fork_with_default_signals();
  if (pid < 0) return fail(std::string(std::strerror(errno)));
  if (pid > 0) return pid;
  ::setpgid(0, 0);
  for (int fd = 0; fd < 3; ++fd) {
    if (child.stdio[fd] >= 0) ::dup2(child.stdio[fd], fd);
  }
  close_fds_from(3);
  if (child.search_path) {
    ::execvpe(child.program.c_str(), argv.data(), env);
  } else {
    ::execve(child.program.c_str(), argv.data(), env);
  }
  const char* why = std::strerror(errno);
  for (const char* piece : {child.exec_error_before.c_str(), why, child.exec_error_after.c_str()})
    (void)!::write(2, piece, std::strlen(piece));
  ::_exit(127);
}

std::vector<std::string> environment_with(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (auto& entry : inherited_environment()) {
    if (!overrides.contains(entry.substr(0, entry.find('=')))) env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::string> inherited_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace dlaunch
