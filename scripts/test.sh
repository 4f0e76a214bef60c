#!/usr/bin/env bash
# Builds everything with warnings as errors and runs every test: doctest units,
# integration tests with real dlaunch processes, sshd servers and LibTorch ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -G Ninja -DDLAUNCH_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
