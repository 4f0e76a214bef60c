#!/usr/bin/python3
"""Python reference for mnist_dist: the classic PyTorch MNIST example under
DistributedDataParallel (Gloo), same model, optimizer, batch size and data,
reporting training samples/s and test accuracy like mnist_dist does. The
benchmark suite's `mnist` scenario (bench/suite/mnist.py) runs it under
Debian's torchrun against mnist_dist under dlaunch:
    /usr/bin/torchrun --standalone --nproc_per_node 2 --redirects 9:1 --tee 9:1 \
        bench/mnist/mnist_ref.py --data DIR
"""

import argparse
import os
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(800, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.view(-1, 800)))
        return F.log_softmax(self.fc2(x), dim=1)


def load(dir_, prefix):
    with open(os.path.join(dir_, f"{prefix}-images-idx3-ubyte"), "rb") as f:
        _, n, rows, cols = struct.unpack(">IIII", f.read(16))
        images = np.frombuffer(f.read(), dtype=np.uint8).reshape(n, 1, rows, cols)
    with open(os.path.join(dir_, f"{prefix}-labels-idx1-ubyte"), "rb") as f:
        f.read(8)
        labels = np.frombuffer(f.read(), dtype=np.uint8)
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.1307) / 0.3081
    return TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    train, test = load(args.data, "train"), load(args.data, "t10k")
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    samples, seconds = 0, 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        for x, y in loader:
            opt.zero_grad()
            F.nll_loss(model(x), y).backward()
            opt.step()
            samples += len(x) * world
        seconds += time.perf_counter() - start
        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            idx = list(range(rank, len(test), world))
            x, y = test[idx]
            correct[0] = (model(x).argmax(1) == y).sum()
            correct[1] = len(idx)
        dist.all_reduce(correct)
        model.train()
        if rank == 0:
            print(f"Test Epoch: {epoch} accuracy={correct[0] / correct[1]:.4f}", flush=True)
    if rank == 0:
        print(f"throughput samples/s={samples / seconds:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
