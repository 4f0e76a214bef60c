#!/usr/bin/env bash
# mnist_dist (2 CPU ranks under dlaunch) against the Python reference (2 ranks
# under torchrun, Debian's python3-torch, Gloo), same data, model, batch size
# and one thread per rank. Prints samples/s and accuracy of both and the ratio.
# usage: bench/mnist/compare_torchrun.sh [epochs] [train samples]
set -euo pipefail
# Debian's python3 carries python3-torch and numpy.
py=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
epochs=${1:-2}
train=${2:-12000}
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"$py" bench/mnist/make_idx.py "$data" --train "$train" --test 2000
export OMP_NUM_THREADS=1 DLAUNCH_STATE_DIR="$data/state"
dl=$(./build/bin/dlaunch -n 2 -- ./build/bin/mnist_dist --data "$data" --epochs "$epochs" \
  --log-interval 100000 2>&1)
# (--redirects/--tee: torchrun 1.13 on Python 3.11 cannot parse its own default of 0)
ref=$("$py" -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 bench/mnist/mnist_ref.py \
  --data "$data" --epochs "$epochs" 2>&1)
dl_rate=$(grep -oP 'throughput samples/s=\K[0-9.]+' <<<"$dl")
ref_rate=$(grep -oP 'throughput samples/s=\K[0-9.]+' <<<"$ref")
dl_acc=$(grep -oP 'accuracy=\K[0-9.]+' <<<"$dl" | tail -1)
ref_acc=$(grep -oP 'accuracy=\K[0-9.]+' <<<"$ref" | tail -1)
echo "2 CPU ranks, 1 thread each, $train samples x $epochs epochs, batch 64:"
echo "  mnist_dist under dlaunch:   $dl_rate samples/s, accuracy $dl_acc"
echo "  Python DDP under torchrun:  $ref_rate samples/s, accuracy $ref_acc"
echo "  ratio: $(python3 -c "print(f'{$dl_rate / $ref_rate:.2f}x')")"
