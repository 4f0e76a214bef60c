#!/usr/bin/env bash
# Builds everything with warnings as errors and runs every test:
#   1. libFuzzer targets (frame decoder, hosts-file loader), FUZZ_SECONDS (30) each
#   2. the rendezvous server tests built with ThreadSanitizer
#   3. unit and integration tests built with AddressSanitizer + UBSan
#   4. the normal build: doctest units, integration tests with real dlaunch
#      processes, sshd servers and LibTorch ranks
# DLAUNCH_QUICK=1 runs step 4 only.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/configure.sh
jobs=$(nproc)
# Each phase says when it starts, so a slow CI run shows where its time went.
phase() { echo "== $1 (at ${SECONDS} s)"; }
common=(-DDLAUNCH_WERROR=ON)
# Sanitizer builds at -O1 -g1 compile 2-3x faster than -O2 -g and still give
# line numbers in reports.
sanitized=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DDLAUNCH_BUILD_EXAMPLES=OFF)

if [[ -z "${DLAUNCH_QUICK:-}" ]]; then
  phase "fuzzing"
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} ./scripts/fuzz.sh

  phase "ThreadSanitizer: rendezvous server"
  configure build-tsan "${common[@]}" "${sanitized[@]}" -DDLAUNCH_SANITIZE=thread
  cmake --build build-tsan -j "$jobs" --target rendezvous_thread_tests
  TSAN_OPTIONS=halt_on_error=1 ./build-tsan/bin/rendezvous_thread_tests

  phase "AddressSanitizer + UBSan: units and integration tests"
  configure build-asan "${common[@]}" "${sanitized[@]}" -DDLAUNCH_SANITIZE=address,undefined
  cmake --build build-asan -j "$jobs"
  phase "AddressSanitizer + UBSan: running"
  # Packaging, the Slurm cluster and the documentation's examples exercise no
  # code of ours that the other tests do not: they run in the normal build
  # only, to keep CI short (the examples also need mnist_dist, not built here).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" \
    -E 'mnist|test_package|test_slurm|test_doc_examples'
fi

phase "build and test"
# With the agent for the other architecture (cmake/agent_arches.cmake).
configure build "${common[@]}" "-DDLAUNCH_AGENT_ARCHES=x86_64;aarch64"
cmake --build build -j "$jobs"
phase "normal build: running"
ctest --test-dir build --output-on-failure -j "$jobs"
phase "done"
