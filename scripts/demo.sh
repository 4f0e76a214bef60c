#!/usr/bin/env bash
# Builds dlaunch and mnist_dist and trains on two local "nodes" from
# hosts.example.toml (no SSH, no GPU): synthetic MNIST-shaped data unless
# MNIST_DIR points at the real IDX files.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja
cmake --build build -j "$(nproc)"
data=(--synthetic 8192)
if [[ -n "${MNIST_DIR:-}" ]]; then data=(--data "$MNIST_DIR"); fi
exec ./build/bin/dlaunch --hosts hosts.example.toml -- ./build/bin/mnist_dist "${data[@]}" --epochs 2
