#include "launcher/sync/image_file.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "transfer/digest_cache.h"

#include "protocol/sha256.h"
#include "tests/unit/scoped_env.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
using dlaunch::testing::ScratchDir;
using dlaunch::testing::write_file;

namespace {

std::string tar_head() {
  std::string head(512, '\0');
  head.replace(0, 13, "manifest.json");
  head.replace(257, 6, std::string("ustar\0", 6));
  return head;
}

}  // namespace

TEST_CASE("image files are told apart by their first bytes, not their names") {
  CHECK(*sniff_image_format(tar_head()) == ImageFormat::archive);
  CHECK(*sniff_image_format("\x1f\x8b\x08\x00rest") == ImageFormat::archive);
  CHECK(*sniff_image_format(std::string("\xfd"
                                        "7zXZ\0",
                                        6)) == ImageFormat::archive);
  std::string sif(64, '\0');
  sif.replace(0, 31, "#!/usr/bin/env run-singularity\n");
  sif.replace(32, 9, "SIF_MAGIC");
  CHECK(*sniff_image_format(sif) == ImageFormat::sif);
  CHECK(*sniff_image_format("hsqs\x01\x02") == ImageFormat::squashfs);
  const auto text = sniff_image_format("FROM debian:12\nRUN true\n");
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().find("not a container image") != std::string::npos);
  CHECK_FALSE(sniff_image_format("").ok());
}

TEST_CASE("an image file is hashed and offered under its digest, read from its own path") {
  ScratchDir dir;
  const std::string content = tar_head() + "layer bytes";
  write_file(dir.dir() / "train image.tar", content);
  auto read = read_image_file((dir.dir() / "train image.tar").string());
  REQUIRE(read.ok());
  const auto& image = *read;
  CHECK(image.format == ImageFormat::archive);
  CHECK(image.size == content.size());
  CHECK(image.sha256 == sha256(content));
  CHECK(image_cache_name(image) == to_hex(sha256(content)) + ".tar");
  const auto manifest = image_file_manifest(image);
  CHECK(manifest.source_file == (dir.dir() / "train image.tar").string());
  REQUIRE(manifest.entries.size() == 1);
  CHECK(manifest.entries[0].path == image_cache_name(image));
  CHECK(manifest.entries[0].size == content.size());
  CHECK(manifest.entries[0].sha256 == image.sha256);
  // --dry-run reads the format only.
  auto unhashed = read_image_file((dir.dir() / "train image.tar").string(), false);
  CHECK(unhashed->sha256.empty());
}

TEST_CASE("a bad --image-file is named with what is wrong") {
  ScratchDir dir;
  const auto missing = read_image_file((dir.dir() / "nope.tar").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() ==
        "--image-file " + (dir.dir() / "nope.tar").string() + ": No such file or directory");
  const auto directory = read_image_file(dir.path());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().find("not a regular file") != std::string::npos);
  write_file(dir.dir() / "Dockerfile", "FROM debian:12\n");
  const auto text = read_image_file((dir.dir() / "Dockerfile").string());
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().starts_with("--image-file " + (dir.dir() / "Dockerfile").string() +
                                 ": is not a container image"));
}

TEST_CASE("an image file's digest is remembered while the file stays the same") {
  ScratchDir dir;
  ScratchDir cache;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", cache.path());
  const auto file = (dir.dir() / "image.tar").string();
  write_file(file, tar_head() + "v1");
  const auto first = *read_image_file(file);
  CHECK(first.sha256 == sha256(tar_head() + "v1"));
  // The remembered digest is what a next read takes: planted, it shows.
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  remember_digest(file, st, std::string(32, 'p'));
  CHECK(read_image_file(file)->sha256 == std::string(32, 'p'));
  // A file written since is hashed again (another size here: two writes in
  // one clock tick may leave the times alike, which a later job never sees).
  write_file(file, tar_head() + "v2 longer");
  CHECK(read_image_file(file)->sha256 == sha256(tar_head() + "v2 longer"));
}

TEST_CASE("an image file reached through a symbolic link is hashed as the file it names") {
  ScratchDir dir;
  ScratchDir cache;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", cache.path());
  const std::string content = tar_head() + "linked";
  write_file(dir.dir() / "image.tar", content);
  std::filesystem::create_symlink(dir.dir() / "image.tar", dir.dir() / "current.tar");
  const auto read = read_image_file((dir.dir() / "current.tar").string());
  REQUIRE_MESSAGE(read.ok(), (read.ok() ? "" : read.error()));
  CHECK(read->sha256 == sha256(content));
}

namespace {

// A tar entry: its header (name, octal size, ustar magic) and its content
// padded to whole blocks.
std::string tar_entry(const std::string& name, const std::string& content) {
  std::string header(512, '\0');
  header.replace(0, name.size(), name);
  char size[12];
  std::snprintf(size, sizeof size, "%011o", static_cast<unsigned>(content.size()));
  header.replace(124, 11, size);
  header.replace(257, 6, std::string("ustar\0", 6));
  std::string padded = content;
  padded.resize((content.size() + 511) / 512 * 512, '\0');
  return header + padded;
}

}  // namespace

TEST_CASE("a tar of a root filesystem is no image; an archive's manifest may come last") {
  ScratchDir dir;
  ScratchDir cache;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", cache.path());
  const auto rootfs = (dir.dir() / "rootfs.tar").string();
  write_file(rootfs, tar_entry("./bin/", "") + tar_entry("./etc/hostname", "box\n") +
                         tar_entry("./etc/os-release", std::string(700, 'x')) +
                         std::string(1024, '\0'));
  const auto refused = read_image_file(rootfs);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() == "--image-file " + rootfs +
                               ": is a tar without an image's manifest.json or index.json (it "
                               "starts with bin/, etc/hostname, etc/os-release): a root "
                               "filesystem is no image; make one with `podman import FILE NAME` "
                               "and save that with `podman save -o FILE NAME`");
  // docker save writes the layers first: the manifest is found past their bytes.
  const auto saved = (dir.dir() / "saved.tar").string();
  write_file(saved, tar_entry("abc123/layer.tar", std::string(5000, 'l')) +
                        tar_entry("manifest.json", "[]") + std::string(1024, '\0'));
  CHECK(read_image_file(saved).ok());
  const auto oci = (dir.dir() / "oci.tar").string();
  write_file(oci,
             tar_entry("blobs/", "") + tar_entry("oci-layout", "{}") + std::string(1024, '\0'));
  CHECK(read_image_file(oci).ok());
}
