#!/usr/bin/env bash
# On a GPU machine (see build_on_gpu.sh): `dlaunch top node` against this host
# idle and while a detached mnist_dist job trains on the GPU, `top job`, and the
# job's --tensorboard-dir copy compared with the trainer's files. Results go to
# $OUT (or ./gpu-results).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${OUT:-gpu-results}")
mkdir -p "$out"
bench/gpu/build_on_gpu.sh
export LD_LIBRARY_PATH=$PWD/build-devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DLAUNCH_STATE_DIR=$out/state
bin=$PWD/build-gpu/bin
work=$(mktemp -d)
cd "$work"
"$bin/dlaunch" top node -H localhost:1 | tee "$out/top_node_idle.txt"
"$bin/dlaunch" -d --name gpujob --tensorboard-dir tb -n 1 -- \
  "$bin/mnist_dist" --synthetic 600000 --epochs 2 --dir tb
for _ in $(seq 1 60); do
  grep -q "Train Epoch" "$DLAUNCH_STATE_DIR/gpujob/rank-0.log" 2>/dev/null && break
  sleep 0.5
done
sleep 2
"$bin/dlaunch" top node -H localhost:1 -d | tee "$out/top_node_busy.txt"
"$bin/dlaunch" top node -H localhost:1 --json > "$out/top_node_busy.json"
"$bin/dlaunch" top job | tee "$out/top_job.txt"
"$bin/dlaunch" list | tee "$out/list.txt"
"$bin/dlaunch" logs gpujob -f | tail -3
"$bin/dlaunch" get gpujob | tee "$out/get.txt"
sha256sum tb/* "$DLAUNCH_STATE_DIR"/gpujob/tensorboard/* | tee "$out/tensorboard.sha256"
