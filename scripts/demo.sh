#!/usr/bin/env bash
# Builds dlaunch and mnist_dist, installs them (PREFIX, default /usr/local;
# through sudo when not root) so that `dlaunch` and `mnist_dist` are on PATH
# as the README's examples type them, and trains on the two local "nodes" of
# hosts.example.toml (no SSH, no GPU): synthetic MNIST-shaped data unless
# MNIST_DIR points at the real IDX files.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/configure.sh
configure build
cmake --build build -j "$(nproc)"
prefix=${PREFIX:-/usr/local}
SUDO=""
if [[ $(id -u) -ne 0 && ! -w "$prefix" ]]; then SUDO=sudo; fi
$SUDO cmake --install build --prefix "$prefix" >/dev/null
echo "demo: installed dlaunch, dlaunch-agent and mnist_dist into $prefix/bin"
if [[ "$(command -v dlaunch || true)" != "$prefix/bin/dlaunch" ]]; then
  echo "demo: $prefix/bin is not first on PATH; add it: export PATH=\"$prefix/bin:\$PATH\""
  export PATH="$prefix/bin:$PATH"
fi
data=(--synthetic 8192)
if [[ -n "${MNIST_DIR:-}" ]]; then data=(--data "$MNIST_DIR"); fi
set -x
dlaunch --hosts hosts.example.toml -- mnist_dist "${data[@]}" --epochs 2
