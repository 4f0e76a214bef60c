#include "launcher/sync/image_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/sha256.h"
#include "transfer/digest_cache.h"

namespace dlaunch {
namespace {

constexpr std::size_t kHeadBytes = 512;

bool has_at(std::string_view head, std::size_t offset, std::string_view magic) {
  return head.size() >= offset + magic.size() && head.substr(offset, magic.size()) == magic;
}

// An uncompressed tar's entries, header by header (a seek per entry, not a
// read of the contents): whether it holds what an image archive has at its
// top, a docker-archive's manifest.json or an OCI layout's index.json. A tar
// of a root filesystem (bin/, etc/, ...) has neither, and no engine loads it.
Result<void> check_image_tar(int fd, std::uint64_t size) {
  constexpr int kMaxEntries = 500'000;
  std::uint64_t offset = 0;
  std::string first_names;
  for (int entry = 0; entry < kMaxEntries && offset + 512 <= size; ++entry) {
    char header[512];
    if (::pread(fd, header, sizeof header, static_cast<off_t>(offset)) != 512) break;
    if (header[0] == '\0') break;  // the end-of-archive blocks
    std::string name(header, ::strnlen(header, 100));
    if (name.starts_with("./")) name.erase(0, 2);
    if (name == "manifest.json" || name == "index.json" || name == "oci-layout") return {};
    if (entry < 3) first_names += (first_names.empty() ? "" : ", ") + name;
    const std::string size_field(header + 124, ::strnlen(header + 124, 12));
    std::uint64_t entry_size = 0;
    for (char c : size_field) {
      if (c >= '0' && c <= '7') entry_size = entry_size * 8 + static_cast<std::uint64_t>(c - '0');
    }
    offset += 512 + (entry_size + 511) / 512 * 512;
  }
  return fail("is a tar without an image's manifest.json or index.json (it starts with " +
              first_names +
              "): a root filesystem is no image; make one with `podman import FILE NAME` and "
              "save that with `podman save -o FILE NAME`");
}

}  // namespace

Result<ImageFormat> sniff_image_format(std::string_view head) {
  // A tar header's magic sits at byte 257; engines also load compressed
  // archives (gzip, xz, zstd, bzip2), found by their own magic.
  if (has_at(head, 257, "ustar")) return ImageFormat::archive;
  if (has_at(head, 0, "\x1f\x8b") ||
      has_at(head, 0,
             "\xfd"
             "7zXZ") ||
      has_at(head, 0, "\x28\xb5\x2f\xfd") || has_at(head, 0, "BZh"))
    return ImageFormat::archive;
  // A SIF file starts with a 32-byte launch script, then its magic.
  if (has_at(head, 32, "SIF_MAGIC")) return ImageFormat::sif;
  if (has_at(head, 0, "hsqs")) return ImageFormat::squashfs;
  return fail(
      "is not a container image: expected an archive of `podman save` or `docker save` (tar, "
      "maybe compressed), a .sif or a squashfs (.sqsh)");
}

Result<ImageFile> read_image_file(const std::string& path, bool hash) {
  const auto failed = [&](const std::string& why) {
    return fail("--image-file " + path + ": " + why);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(std::strerror(errno));
  const struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return failed("not a regular file");
  std::string head(kHeadBytes, '\0');
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  if (n < 0) return failed(std::strerror(errno));
  head.resize(static_cast<std::size_t>(n));
  auto format = sniff_image_format(head);
  if (!format) return failed(format.error());
  if (*format == ImageFormat::archive && has_at(head, 257, "ustar")) {
    if (auto checked = check_image_tar(fd, static_cast<std::uint64_t>(st.st_size)); !checked)
      return failed(checked.error());
  }
  ImageFile image{path, *format, static_cast<std::uint64_t>(st.st_size)};
  if (!hash) return image;
  // Gigabytes take seconds to hash: a file unchanged since the last job is not read again.
  auto digest = file_digest(path, st);
  if (!digest) return failed(std::strerror(errno));
  image.sha256 = std::move(*digest);
  return image;
}

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::archive:
      return "archive";
    case ImageFormat::sif:
      return "sif";
    case ImageFormat::squashfs:
      return "squashfs";
  }
  return "archive";
}

std::string image_cache_name(const ImageFile& image) {
  const char* extension = image.format == ImageFormat::sif        ? ".sif"
                          : image.format == ImageFormat::squashfs ? ".sqsh"
                                                                  : ".tar";
  return to_hex(image.sha256) + extension;
}

SyncManifest image_file_manifest(const ImageFile& image) {
  SyncManifest manifest;
  manifest.source_file = image.path;
  proto::SyncEntry entry;
  entry.path = image_cache_name(image);
  entry.kind = proto::SyncKind::file;
  entry.mode = 0644;
  entry.size = image.size;
  entry.sha256 = image.sha256;
  manifest.entries.push_back(std::move(entry));
  manifest.files = 1;
  manifest.bytes = image.size;
  return manifest;
}

}  // namespace dlaunch
