#!/usr/bin/env bash
# Builds everything with warnings as errors and runs every test once (the SSH
# tests labelled `threads` twice: also under ThreadSanitizer):
#   1. a clang build with AddressSanitizer + UBSan, which also carries the
#      libFuzzer targets and the bench tools: the fuzzers (frame decoder,
#      hosts-file loader) run for FUZZ_SECONDS (30) side by side, then the
#      doctest units and every integration test that needs no unsanitized build
#   2. the threaded code built with ThreadSanitizer: the rendezvous server, the
#      terminal writer and an agent beside its server in thread_tests, and
#      dlaunch itself under the SSH tests labelled `threads` (a thread per
#      host, jump hosts, reverse forwards)
#   3. the normal build (GCC, each file alone, so a missing #include shows): the
#      product, mnist_dist and the aarch64 agent, and the integration tests
#      labelled `unsanitized` (tests/CMakeLists.txt): real LibTorch ranks, the
#      static agent, the package, Slurm and the documentation's examples, and
#      what is measured against glibc's malloc: return_free_heap, and the
#      output flood's documented 128 MiB bound. LibTorch must be found there
#      (DLAUNCH_REQUIRE_TORCH: the README's set-up installs it).
# DLAUNCH_QUICK=1 runs step 3 only, with the units and every test in it.
# At the end, also when a step failed: one table of every skipped test and its
# reason; a skip that scripts/skips.sh does not allow (a package, a build or a
# daemon the README's set-up provides, missing) fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/configure.sh
source scripts/skips.sh
jobs=$(nproc)
# Each phase says when it starts, so a slow CI run shows where its time went.
phase() { echo "== $1 (at ${SECONDS} s)"; }
# Each integration test's skips go to DLAUNCH_SKIP_LOG (tests/integration/
# harness.py), marked with DLAUNCH_SKIP_PHASE; ctest's JUnit file for each
# phase names any test that exited 77 without saying why.
skip_dir=$(mktemp -d)
export DLAUNCH_SKIP_LOG="$skip_dir/skips.tsv"
skips() {
  local rc=$?
  phase "skips"
  if ! skip_report "$DLAUNCH_SKIP_LOG" "$skip_dir"/*.xml && ((rc == 0)); then rc=1; fi
  rm -rf "$skip_dir"
  exit "$rc"
}
trap skips EXIT
common=(-DDLAUNCH_WERROR=ON)
# LLVM's linker where installed (scripts/install-deps.sh): GNU ld takes about
# 4x as long on the sanitized binaries with their debug information.
if command -v ld.lld > /dev/null; then
  common+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
fi
# The sanitizer builds compile with clang, which takes half GCC's time on this
# code at -O1, and in unity batches, which parse Asio, CLI11 and the standard
# headers once per batch rather than once per file (the normal build still
# compiles each file alone, so a missing #include shows there). -O1 -g1 still
# gives line numbers in reports. No examples or bench tools: no test runs them.
sanitized=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None
  "-DCMAKE_C_FLAGS=-O1 -g1" "-DCMAKE_CXX_FLAGS=-O1 -g1" -DCMAKE_UNITY_BUILD=ON
  -DDLAUNCH_BUILD_EXAMPLES=OFF)

if [[ -z "${DLAUNCH_QUICK:-}" ]]; then
  phase "AddressSanitizer + UBSan build (clang, fuzzers included)"
  configure build-asan "${common[@]}" "${sanitized[@]}" -DDLAUNCH_SANITIZE=address,undefined \
    -DDLAUNCH_FUZZ=ON
  cmake --build build-asan -j "$jobs"

  phase "fuzzing"
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} ./scripts/fuzz.sh build-asan

  phase "AddressSanitizer + UBSan: running"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 DLAUNCH_SKIP_PHASE=asan \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE unsanitized \
    --output-junit "$skip_dir/asan.xml"

  phase "ThreadSanitizer: rendezvous server, terminal writer, agent, SSH transport and jump hosts"
  configure build-tsan "${common[@]}" "${sanitized[@]}" -DDLAUNCH_SANITIZE=thread
  cmake --build build-tsan -j "$jobs" --target thread_tests dlaunch dlaunch-agent
  TSAN_OPTIONS=halt_on_error=1 ./build-tsan/bin/thread_tests
  # dlaunch under the SSH tests labelled `threads`. A report also goes to a
  # file: a test that expects dlaunch to fail would not notice one otherwise.
  tsan_reports=$(mktemp -d)
  TSAN_OPTIONS="halt_on_error=1:log_path=$tsan_reports/report" DLAUNCH_SKIP_PHASE=tsan \
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L threads \
    --output-junit "$skip_dir/tsan.xml"
  if compgen -G "$tsan_reports/report*" > /dev/null; then
    cat "$tsan_reports"/report*
    echo "ThreadSanitizer reported the races above" >&2
    exit 1
  fi
  rm -rf "$tsan_reports"
fi

phase "build and test"
# With the agent for the other architecture (cmake/agent_arches.cmake). The
# units and the bench tools were built and run under the sanitizers.
# Without -g: GCC spends about a third of each file's time writing debug
# information that no test reads (the sanitizer build keeps -g1 for its reports).
# LibTorch must be found (examples/mnist_dist/CMakeLists.txt): without it the
# mnist_dist tests would skip, and the package would lack mnist_dist.
normal=("${common[@]}" "-DDLAUNCH_AGENT_ARCHES=x86_64;aarch64" -DDLAUNCH_REQUIRE_TORCH=ON
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG")
only=()
if [[ -z "${DLAUNCH_QUICK:-}" ]]; then
  normal+=(-DDLAUNCH_UNIT_TESTS=OFF -DDLAUNCH_BUILD_BENCH=OFF)
  only=(-L unsanitized)
else
  normal+=(-DDLAUNCH_UNIT_TESTS=ON -DDLAUNCH_BUILD_BENCH=ON)
fi
configure build "${normal[@]}"
cmake --build build -j "$jobs"
phase "normal build: running"
DLAUNCH_SKIP_PHASE=normal ctest --test-dir build --output-on-failure -j "$jobs" "${only[@]}" \
  --output-junit "$skip_dir/normal.xml"

# The Release configuration users build (-O3) warns where -O2 does not: GCC
# 12's false -Wrestrict on string concatenation (CMakeLists.txt) once failed
# it. The files it failed on, compiled as a Release build compiles them.
phase "Release build: the files -O3 once failed on"
configure build-release -DDLAUNCH_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DDLAUNCH_UNIT_TESTS=OFF \
  -DDLAUNCH_BUILD_EXAMPLES=OFF -DDLAUNCH_BUILD_BENCH=OFF
cmake --build build-release -j "$jobs" --target common/CMakeFiles/dlaunch_common.dir/console.cpp.o \
  ssh/CMakeFiles/dlaunch_ssh_spec.dir/jump_spec.cpp.o
phase "done"
