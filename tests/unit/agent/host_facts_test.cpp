#include <doctest/doctest.h>

#include "agent/host_facts.h"

using namespace dlaunch;

TEST_CASE("os-release: PRETTY_NAME, unquoted; else NAME and VERSION_ID") {
  CHECK(parse_os_release("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 "
                         "(bookworm)\"\nVERSION_ID=\"12\"\n") == "Debian GNU/Linux 12 (bookworm)");
  CHECK(parse_os_release("NAME=Alpine\nVERSION_ID=3.19.1\n") == "Alpine 3.19.1");
  CHECK(parse_os_release("PRETTY_NAME='It\\'s \\\"quoted\\\"'\n") == "It's \"quoted\"");
  CHECK(parse_os_release("# nothing\n") == "");
}

TEST_CASE("python output: version line, its path, then torch's or an empty line") {
  std::string python, path, torch;
  parse_python_output("3.11.2\n/usr/bin/python3\n2.1.0+cpu\n", python, path, torch);
  CHECK(python == "3.11.2");
  CHECK(path == "/usr/bin/python3");
  CHECK(torch == "2.1.0+cpu");
  parse_python_output("3.11.7\n/root/.pyenv/shims/python3\n\n", python, path, torch);
  CHECK(python == "3.11.7");
  CHECK(path == "/root/.pyenv/shims/python3");
  CHECK(torch == "");
  parse_python_output("", python, path, torch);
  CHECK(python == "");
  CHECK(path == "");
  CHECK(torch == "");
}

TEST_CASE("NVML's CUDA driver version as major.minor") {
  CHECK(cuda_version_text(12040) == "12.4");
  CHECK(cuda_version_text(11080) == "11.8");
  CHECK(cuda_version_text(0) == "");
}

TEST_CASE("facts collected on this machine are within the message's limits") {
  const auto facts = collect_host_facts(std::chrono::seconds(20));
  CHECK(facts.cpus >= 1);
  CHECK(!facts.kernel.empty());
  CHECK(facts.shm_size != 0);
  CHECK(facts.os.size() <= proto::kMaxFactText);
  CHECK(facts.gpus.size() <= proto::kMaxGpus);
}

TEST_CASE("glibc_version_in: glibc's banner, old and new") {
  using namespace std::string_literals;
  CHECK(glibc_version_in("\x7f"
                         "ELF...GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release "
                         "version 2.36.\nCopyright"s) == "2.36");
  CHECK(glibc_version_in("GNU C Library (GNU libc) stable release version 2.17, by Roland"s) ==
        "2.17");
  CHECK(glibc_version_in("\0\0release version \0 release version 2.31.\n"s) == "2.31");
  CHECK(glibc_version_in("no banner here"s).empty());
  CHECK(glibc_version_in("release version 2"s).empty());
}

TEST_CASE("host_libc: this machine's glibc, as the check table shows it") {
  const auto libc = host_libc();
  CHECK(libc.starts_with("glibc 2."));
}
