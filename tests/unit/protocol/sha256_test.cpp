#include "protocol/sha256.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace dlaunch;

TEST_CASE("SHA-256 of known inputs, in one piece or several") {
  CHECK(to_hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(to_hex(sha256("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a");
  h.update("bc");
  CHECK(h.finish() == sha256("abc"));
  h.update("abc");  // starts over after finish()
  CHECK(h.finish() == sha256("abc"));
}

TEST_CASE("sha256_file reads a file; a missing one or a symlink is nullopt") {
  const auto dir = std::filesystem::temp_directory_path() / "dlaunch-sha256-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string content(200'000, 'q');
  std::ofstream(dir / "f", std::ios::binary) << content;
  CHECK(sha256_file((dir / "f").string()) == sha256(content));
  CHECK_FALSE(sha256_file((dir / "missing").string()).has_value());
  std::filesystem::create_symlink(dir / "f", dir / "link");
  CHECK_FALSE(sha256_file((dir / "link").string()).has_value());
  std::filesystem::remove_all(dir);
}
