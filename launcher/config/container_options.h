// --image's companions, checked before anything starts: --mount SRC:DST[:ro]
// and --shm-size SIZE. Each returns the error to print, naming the flag and
// what was given; nullopt when the value is good.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dlaunch {

// The engines --container-engine names ("auto" takes the first found on each host).
inline constexpr std::string_view kContainerEngines[] = {"auto", "podman", "docker", "apptainer",
                                                         "enroot"};

// SRC:DST[:ro|:rw], both absolute (a relative path would mean a different
// place on each host), with no comma (docker's --mount syntax would split it).
std::optional<std::string> check_mount(std::string_view text);

// A number with an optional unit b, k, m or g (as podman and docker take it),
// at least 1m: less is the 64 MB trap that SIGBUSes PyTorch's data loaders.
std::optional<std::string> check_shm_size(std::string_view text);

}  // namespace dlaunch
