// `--image-file`: the host's cache of image files that came with a job
// ($XDG_CACHE_HOME/dlaunch/images, else ~/.cache/dlaunch/images), each named
// by its SHA-256 (the coordinator's SyncOffer into SyncInto::image_cache puts
// it there, agent/sync_receiver.h), and what makes a cached file runnable:
// - an archive (`podman save`, `docker save`) is loaded into podman or docker
//   once; a file beside it ("<name>.podman") keeps the name it was loaded as,
//   and the next job only asks the engine whether it still has that image;
// - apptainer runs a .sif as it is, and an archive as docker-archive:FILE;
// - enroot runs a squashfs (.sqsh) as it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/container_host.h"

namespace dlaunch {

// Created (mode 0700) when missing; an error names the directory when it
// cannot be.
Result<std::string> image_cache_directory();

// What the ranks run from the cached file `path` ("<sha256>.tar", ".sif",
// ".sqsh"): `wanted` (--image) when given, else the name the archive loaded
// as, or the file itself. Blocking (a load takes seconds to minutes): run it
// off the event loop. An error gives the engine's message.
Result<std::string> ready_cached_image(const ContainerHost& host, const std::string& path,
                                       const std::string& wanted);

// The first image `podman load` or `docker load` reports in `output`
// ("Loaded image: NAME", "Loaded image(s): NAME,...", "Loaded image ID: ID").
std::optional<std::string> loaded_image_name(std::string_view output);

}  // namespace dlaunch
