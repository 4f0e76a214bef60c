#include <doctest/doctest.h>

#include <cstdio>
#include <random>
#include <string>

#include "ssh/shell_quote.h"

using namespace dlaunch;

namespace {

// What /bin/sh makes of `printf %s <word>`: the bytes the word stands for.
std::string through_shell(const std::string& word) {
  const std::string cmd = "printf %s " + word;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string got;
  char buf[256];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) got.append(buf, n);
  ::pclose(p);
  return got;
}

}  // namespace

TEST_CASE("shell quoting: single quotes, and ' written as '\\''") {
  CHECK(shell_quote("plain") == "'plain'");
  CHECK(shell_quote("it's") == R"('it'\''s')");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("''") == R"(''\'''\''')");
}

TEST_CASE("shell quoting: what shells expand stays literal") {
  for (const std::string s : {"$(touch /tmp/dlaunch-quote-pwned)", "`id`", "$HOME", "a b\tc\nd",
                              "*", "~", "; exit 1", "\\", "\"", "-n", "!x", "ünïcødé ✓"}) {
    CHECK(through_shell(shell_quote(s)) == s);
  }
}

TEST_CASE("shell quoting survives a POSIX shell for random bytes") {
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 40, '\0');
    for (auto& c : s) c = static_cast<char>(1 + rng() % 255);  // argv cannot hold NUL
    CHECK(through_shell(shell_quote(s)) == s);
  }
}
