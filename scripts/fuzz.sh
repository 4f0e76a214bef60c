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
for target in frame_fuzz hosts_file_fuzz; do
  seeds=$PWD/tests/fuzz/corpus/${target%_fuzz}
  scratch=$(mktemp -d)
  echo "fuzz: $target for ${seconds}s"
  log=$(mktemp)
  status=0
  (cd "$build" && UBSAN_OPTIONS=halt_on_error=1 ./bin/$target -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "$scratch" "$seeds" >"$log" 2>&1) || status=$?
  grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|Test unit written" "$log" || true
  if [[ $status -ne 0 ]]; then
    tail -50 "$log"; echo "fuzz: $target failed (exit $status; input kept in $build/)"; exit 1
  fi
  rm -f "$log"
  rm -rf "$scratch"
done
echo "fuzz: no crashes"
