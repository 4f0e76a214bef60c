#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for
# FUZZ_SECONDS (default 60) from the committed seed corpus. New inputs go to a
# scratch directory; a crash leaves its input in the build tree and fails the run.
#   ./scripts/fuzz.sh            configures and builds build-fuzz/ for the fuzzers alone
#   ./scripts/fuzz.sh BUILD_DIR  uses a tree already configured with clang and
#                                -DDLAUNCH_FUZZ=ON (scripts/test.sh's sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
build=${1:-}
if [[ -z "$build" ]]; then
  build=build-fuzz
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DDLAUNCH_FUZZ=ON -DDLAUNCH_SANITIZE=address,undefined -DDLAUNCH_BUILD_EXAMPLES=OFF \
    -DDLAUNCH_BUILD_TESTS=OFF -DDLAUNCH_BUILD_BENCH=OFF -DDLAUNCH_WERROR=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target frame_fuzz hosts_file_fuzz
# Side by side: each fuzzer is one process on one core.
fuzz_one() {
  local target=$1 seeds=$PWD/tests/fuzz/corpus/${1%_fuzz} scratch log status=0
  scratch=$(mktemp -d)
  log=$(mktemp)
  (cd "$build" && UBSAN_OPTIONS=halt_on_error=1 ./bin/$target -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "$scratch" "$seeds" >"$log" 2>&1) || status=$?
  {
    echo "fuzz: $target for ${seconds}s"
    grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|Test unit written" "$log" || true
    if [[ $status -ne 0 ]]; then
      tail -50 "$log"; echo "fuzz: $target failed (exit $status; input kept in $build/)"
    fi
  }
  rm -rf "$log" "$scratch"
  return "$status"
}
pids=()
for target in frame_fuzz hosts_file_fuzz; do
  fuzz_one "$target" >"$build/$target.out" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed=1
done
cat "$build/frame_fuzz.out" "$build/hosts_file_fuzz.out"
if [[ $failed -ne 0 ]]; then exit 1; fi
echo "fuzz: no crashes"
