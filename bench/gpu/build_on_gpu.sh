#!/usr/bin/env bash
# On a GPU machine (CUDA, a CUDA PyTorch's python3 on PATH, build-devdeps/ from
# bundle_deps.sh): builds dlaunch, dlaunch-agent and mnist_dist against that
# PyTorch's LibTorch into build-gpu/.
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=$PWD/build-devdeps/usr
export PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
torch=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build-gpu -G Ninja -DDLAUNCH_BUILD_TESTS=OFF "-DCMAKE_PREFIX_PATH=$deps;$torch" \
  -DASIO_INCLUDE_DIR="$deps/include" "-DCMAKE_CXX_FLAGS=-isystem $deps/include" | grep mnist_dist
ninja -C build-gpu -j "$(nproc)" | tail -1
