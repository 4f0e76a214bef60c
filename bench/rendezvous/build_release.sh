#!/usr/bin/env bash
# Builds dlaunch, dlaunch-agent and the load generator dlaunch-rdzv-load
# (RelWithDebInfo, no tests or examples) into build-rel/ for
# bench/rendezvous/scale.py, with the headers and libraries of build-devdeps/
# (bench/gpu/bundle_deps.sh) on a machine that has no -dev packages, or the
# system's where it has them.
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLAUNCH_BUILD_TESTS=OFF
  -DDLAUNCH_BUILD_EXAMPLES=OFF)
if [[ -d build-devdeps/usr ]] && ! [[ -f /usr/include/libssh2.h ]]; then
  deps=$PWD/build-devdeps/usr
  export PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig
  args+=("-DCMAKE_PREFIX_PATH=$deps" "-DASIO_INCLUDE_DIR=$deps/include"
    "-DCMAKE_CXX_FLAGS=-isystem $deps/include")
fi
cmake -S . -B build-rel "${args[@]}" >/dev/null
ninja -C build-rel -j "$(nproc)" dlaunch dlaunch-agent dlaunch-rdzv-load | tail -1
