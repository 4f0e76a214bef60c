#!/usr/bin/env bash
# On a GPU machine (see build_on_gpu.sh): torchrun's command lines through
# dlaunch with that machine's CUDA PyTorch.
#   1. test_torchrun_compat's one-machine cases against that torch, and its
#      check that every flag of that torch's torchrun parser is accepted;
#   2. a DDP script over NCCL on the GPU, started by `dlaunch --standalone
#      --nproc_per_node=gpu` and by `torchrun` with the same line, interleaved,
#      5 runs each: wall time from start to exit;
#   3. --nproc-per-node cpu.
# Results go to $OUT (or ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${OUT:-gpu-results}")
mkdir -p "$out"
bench/gpu/build_on_gpu.sh || exit 1
export LD_LIBRARY_PATH=$PWD/build-devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DLAUNCH_STATE_DIR=$out/state PYTHONUNBUFFERED=1
bin=$PWD/build-gpu/bin
python=$(command -v python3)
"$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
  torch.cuda.get_device_name(0), "NCCL", torch.cuda.nccl.version())' | tee "$out/versions.txt"

DLAUNCH_BIN_DIR=$bin DLAUNCH_TEST_TORCH_PYTHON=$python "$python" -u \
  tests/integration/test_torchrun_compat.py TestEveryFlag TestOneMachine 2>&1 |
  tee "$out/test_torchrun_compat.txt" | grep -E "^test_|^Ran|^OK|FAILED|Error"

work=$(mktemp -d)
cat > "$work/ddp_nccl.py" <<'PY'
import os, time
import torch
import torch.distributed as dist
dist.init_process_group("nccl")
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4096, 4096).cuda(),
                                                  device_ids=[local])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 4096, device="cuda")
def steps(n):
    for _ in range(n):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    torch.cuda.synchronize()
steps(3)
start = time.perf_counter()
steps(50)
ms = (time.perf_counter() - start) * 1000 / 50
t = torch.tensor([float(dist.get_rank() + 1)], device="cuda")
dist.all_reduce(t)
print(f"nccl rank={dist.get_rank()} world={dist.get_world_size()} backend={dist.get_backend()} "
      f"device={torch.cuda.get_device_name(local)} sum={t.item():.0f} step_ms={ms:.2f}",
      flush=True)
dist.destroy_process_group()
PY
cd "$work"
now() { date +%s.%N; }
: > "$out/launch_times.csv"
for i in 1 2 3 4 5 6; do  # run 1 of each is the warm-up
  s=$(now); "$bin/dlaunch" --standalone --nproc_per_node=gpu ddp_nccl.py > "d$i.txt" 2>&1
  rc_d=$?; e=$(now)
  echo "dlaunch,$i,$rc_d,$(awk "BEGIN{print $e - $s}")" >> "$out/launch_times.csv"
  s=$(now); "$python" -m torch.distributed.run --standalone --nproc_per_node=gpu ddp_nccl.py \
    > "t$i.txt" 2>&1
  rc_t=$?; e=$(now)
  echo "torchrun,$i,$rc_t,$(awk "BEGIN{print $e - $s}")" >> "$out/launch_times.csv"
done
cp d6.txt "$out/dlaunch_nccl.txt"; cp t6.txt "$out/torchrun_nccl.txt"
grep -h "nccl rank" d6.txt t6.txt
cat "$out/launch_times.csv"
"$python" - "$out/launch_times.csv" <<'PY' | tee "$out/launch_summary.txt"
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r[1] != "1"]
for who in ("dlaunch", "torchrun"):
    t = sorted(float(r[3]) for r in rows if r[0] == who)
    codes = {r[2] for r in rows if r[0] == who}
    print(f"{who}: median {statistics.median(t):.2f} s, min {t[0]:.2f}, max {t[-1]:.2f}, "
          f"exit codes {sorted(codes)}")
PY
"$bin/dlaunch" --nproc-per-node cpu --no-python sh -c 'echo "world=$WORLD_SIZE"' \
  > "$out/nproc_cpu.txt" 2>&1
echo "--nproc-per-node cpu: $(grep -c 'world=' "$out/nproc_cpu.txt") ranks, nproc $(nproc)," \
  "$(sort -u < <(grep -o 'world=[0-9]*' "$out/nproc_cpu.txt"))"
