#!/usr/bin/env bash
# Installs the Debian packages dlaunch needs to build and test, skipping what
# is already present. Run as root (CI does); otherwise it re-runs under sudo.
set -euo pipefail

# dpkg-dev brings dpkg-shlibdeps, which `cpack -G DEB` runs for the package's Depends.
build_pkgs=(build-essential cmake ninja-build pkg-config clang-format
  libasio-dev libssh2-1-dev libcli11-dev libtomlplusplus-dev libspdlog-dev
  doctest-dev libssl-dev libtorch-dev libgloo-dev zlib1g-dev dpkg-dev
  libcpp-httplib-dev prometheus-cpp-dev)
# clang and its runtime for the libFuzzer targets; sshd and iproute2 for the SSH
# tests' hosts; Debian's python3 (with python3-torch) runs the ranks those tests start
# over SSH; nftables and iptables make firewalls inside test namespaces; man-db and
# zsh let the package test render the man page and parse the zsh completion;
# slurm-wlm (slurmctld, slurmd, srun) and munge make the Slurm test's cluster;
# debootstrap and busybox-static make the roots the agent is tried on (a Debian 11
# userland, and one with nothing but busybox); jq runs the --help examples that
# pipe JSON into it (test_doc_examples); podman, runc and catatonit run the ranks of
# test_containers in containers; git serves and clones test_sync_git's repository;
# lld links the test builds' large binaries in a fraction of ld's time; gdb takes
# the native stacks of hung mnist_dist ranks (test_hangs_mnist, `dlaunch stacks`);
# chromium and prometheus (with promtool) are the browser and the Prometheus of
# test_ui, which load `dlaunch ui`'s pages and scrape its /metrics.
test_pkgs=(openssh-server openssh-client iproute2 procps python3 clang libclang-rt-14-dev lld
  python3-torch nftables iptables man-db zsh slurm-wlm munge debootstrap busybox-static jq
  podman runc catatonit git gdb chromium prometheus)

# The test build also carries the agent for the other architecture (x86_64 and
# aarch64 each way): Debian's cross compiler, that architecture's static
# libcrypto (multiarch), and qemu to run it in the tests.
case "$(dpkg --print-architecture)" in
  amd64) other=arm64 cross_pkgs=(g++-aarch64-linux-gnu libssl-dev:arm64 qemu-user-static) ;;
  arm64) other=amd64 cross_pkgs=(g++-x86-64-linux-gnu libssl-dev:amd64 qemu-user-static) ;;
  *) other="" cross_pkgs=() ;;
esac

want=("${build_pkgs[@]}")
if [[ "${1:-}" != "--build-only" ]]; then want+=("${test_pkgs[@]}" "${cross_pkgs[@]}"); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
if [[ -n "$other" && " ${missing[*]} " == *":$other "* ]] &&
  ! dpkg --print-foreign-architectures | grep -qx "$other"; then
  $SUDO dpkg --add-architecture "$other"
fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
