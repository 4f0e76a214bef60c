#!/usr/bin/env bash
# mnist_dist (2 CPU ranks, under dlaunch when it is built, else started by a
# loop that sets the torchrun environment) against the Python reference (2
# ranks under torchrun, Debian's python3-torch, DDP over Gloo): same IDX data,
# model, optimizer, batch size and one thread per rank. Prints training
# samples/s and final accuracy of both and the ratio.
# usage: bench/mnist/compare_torchrun.sh [epochs] [train samples]
#   BUILD_DIR (default build) holds bin/mnist_dist and bin/dlaunch.
set -euo pipefail
# Debian's python3 carries python3-torch and numpy.
py=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
epochs=${1:-2}
train=${2:-12000}
if [[ ! -x $bin/mnist_dist ]]; then
  echo "compare_torchrun: $bin/mnist_dist is not built (set BUILD_DIR)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" bench/mnist/make_idx.py "$work" --train "$train" --test 2000
export OMP_NUM_THREADS=1
args=(--data "$work" --epochs "$epochs" --log-interval 100000)

free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

run_mnist_dist() {
  if [[ -x $bin/dlaunch && -x $bin/dlaunch-agent ]]; then
    DLAUNCH_STATE_DIR="$work/state" "$bin/dlaunch" -n 2 -- "$bin/mnist_dist" "${args[@]}" 2>&1
  else
    local port rank
    port=$(free_port)
    for rank in 0 1; do
      RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$bin/mnist_dist" "${args[@]}" >"$work/rank$rank.log" 2>&1 &
    done
    wait
    cat "$work/rank0.log"
  fi
}

run_reference() {
  # (--redirects/--tee: torchrun 1.13 on Python 3.11 cannot parse its own default of 0)
  "$py" -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 \
    --master_addr 127.0.0.1 --master_port "$(free_port)" bench/mnist/mnist_ref.py \
    --data "$work" --epochs "$epochs" 2>&1
}

how="an env loop"
if [[ -x $bin/dlaunch && -x $bin/dlaunch-agent ]]; then how="dlaunch"; fi
# Alternate the two and keep each one's best run: on a shared machine a
# neighbour's load lands on one run or the other, never helps.
repeats=${REPEATS:-3}
dl_rates=() ref_rates=()
for ((i = 1; i <= repeats; i++)); do
  dl=$(run_mnist_dist)
  ref=$(run_reference)
  dl_rates+=("$(grep -oP 'throughput samples/s=\K[0-9.]+' <<<"$dl")")
  ref_rates+=("$(grep -oP 'throughput samples/s=\K[0-9.]+' <<<"$ref")")
  dl_acc=$(grep -oP 'accuracy=\K[0-9.]+' <<<"$dl" | tail -1)
  ref_acc=$(grep -oP 'accuracy=\K[0-9.]+' <<<"$ref" | tail -1)
done
best() { printf '%s\n' "$@" | sort -g | tail -1; }
dl_rate=$(best "${dl_rates[@]}")
ref_rate=$(best "${ref_rates[@]}")
echo "2 CPU ranks, 1 thread each, $train samples x $epochs epochs, batch 64 per rank, best of $repeats:"
printf '  %-32s %8s samples/s (runs: %s), accuracy %s\n' \
  "mnist_dist (via $how):" "$dl_rate" "${dl_rates[*]}" "$dl_acc" \
  "Python DDP under torchrun:" "$ref_rate" "${ref_rates[*]}" "$ref_acc"
echo "  ratio: $("$py" -c "print(f'{$dl_rate / $ref_rate:.2f}x')")"
