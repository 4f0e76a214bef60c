// `--image-file FILE`: a container image that travels with the job instead of
// being pulled (clusters without a registry). The coordinator reads what kind
// of image it is from its first bytes, hashes it, and offers it to every
// agent as one file named by its SHA-256 for the host's image cache; a host
// that has it already receives nothing (agent/image_cache.h loads it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "launcher/sync/sync_manifest.h"

namespace dlaunch {

enum class ImageFormat {
  archive,   // `podman save` / `docker save` (docker or OCI archive, maybe compressed)
  sif,       // apptainer / singularity
  squashfs,  // enroot's .sqsh
};

struct ImageFile {
  std::string path;  // as given
  ImageFormat format = ImageFormat::archive;
  std::uint64_t size = 0;
  std::string sha256 = {};  // 32 bytes; empty when not hashed (--dry-run)
};

// Reads the format from the file's first bytes; `hash`: also its SHA-256. An
// error names the file and says what is wrong.
Result<ImageFile> read_image_file(const std::string& path, bool hash = true);
// The format from a file's first bytes (at least 262 of them where there are).
Result<ImageFormat> sniff_image_format(std::string_view head);

std::string_view image_format_name(ImageFormat format);  // "archive", "sif", "squashfs"
// The name in the hosts' cache: "<sha256 hex>.tar", ".sif" or ".sqsh".
std::string image_cache_name(const ImageFile& image);
// The offer of that one file, read from image.path.
SyncManifest image_file_manifest(const ImageFile& image);

}  // namespace dlaunch
