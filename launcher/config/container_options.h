// --image's companions, checked before anything starts: --mount SRC:DST[:ro]
// and --shm-size SIZE. Each fails with the error to print, naming the flag and
// what was given.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace dlaunch {

// The engines --container-engine names ("auto" takes the first found on each host).
inline constexpr std::string_view kContainerEngines[] = {"auto", "podman", "docker", "apptainer",
                                                         "enroot"};

// SRC:DST[:ro|:rw], both absolute (a relative path would mean a different
// place on each host), with no comma (docker's --mount syntax would split it).
Result<void> check_mount(std::string_view text);

// A number with an optional unit b, k, m or g (as podman and docker take it),
// at least 1m: less is the 64 MB trap that SIGBUSes PyTorch's data loaders.
Result<void> check_shm_size(std::string_view text);

}  // namespace dlaunch
