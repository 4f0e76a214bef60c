#!/usr/bin/env bash
# On a GPU machine (CUDA, a CUDA PyTorch's python3 on PATH, build-devdeps/ from
# bundle_deps.sh): builds dlaunch and mnist_dist against that PyTorch's
# LibTorch, trains mnist_dist through dlaunch on the GPU and on the CPU, and
# runs `dlaunch check` on this machine listed twice. Results go to $OUT (or
# ./gpu-results).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}
mkdir -p "$out"
TIMEFORMAT="build: wall %R s"
time bench/gpu/build_on_gpu.sh
export LD_LIBRARY_PATH=$PWD/build-devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=build-gpu/bin
for device in cuda cpu; do
  flags=(--synthetic 60000 --epochs 2)
  [[ $device == cpu ]] && flags+=(--no-cuda)
  TIMEFORMAT="wall %R s"
  { time "$bin/dlaunch" --nproc-per-node 1 -- "$bin/mnist_dist" "${flags[@]}"; } \
    > "$out/mnist_$device.txt" 2>&1
  grep -E "backend|accuracy|samples/s|wall" "$out/mnist_$device.txt"
done
printf '[[host]]\nname = "gpu0"\naddress = "127.0.0.1"\n[[host]]\nname = "gpu0b"\naddress = "localhost"\n' \
  > "$out/hosts.toml"
"$bin/dlaunch" check --hosts "$out/hosts.toml" | tee "$out/check.txt" | head -4
"$bin/dlaunch" check --json --hosts "$out/hosts.toml" > "$out/check.json"
# The NCCL all-reduce of `check --nccl` (agent/nccl_allreduce.cpp) on this machine's GPUs.
"$bin/dlaunch" check -H "localhost:$(nvidia-smi -L | wc -l)" --nccl --matrix-seconds 1 \
  | tee "$out/check_nccl.txt" | tail -18
