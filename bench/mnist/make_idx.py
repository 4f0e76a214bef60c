#!/usr/bin/python3
"""Writes a deterministic MNIST-shaped data set as the four standard IDX files,
so that mnist_dist and the Python reference train on the very same bytes (the
benchmark suite's `mnist` scenario, bench/suite/mnist.py).

usage: make_idx.py DIR [--train N] [--test N]
"""

import argparse
import os
import struct

import numpy as np


def make(n, rng, templates):
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    images = np.zeros((n, 28, 28), dtype=np.float32)
    shifts = rng.integers(-2, 3, (n, 2))
    for i in range(n):
        images[i] = np.roll(templates[labels[i]], tuple(shifts[i]), axis=(0, 1))
    images += rng.normal(0, 0.15, images.shape).astype(np.float32)
    return (np.clip(images, 0, 1) * 255).astype(np.uint8), labels


def strokes(rng):
    t = np.zeros((28, 28), dtype=np.float32)
    for _ in range(3):
        x0, y0, x1, y1 = rng.uniform(5, 22, 4)
        for s in np.linspace(0, 1, 41):
            x, y = int(x0 + (x1 - x0) * s), int(y0 + (y1 - y0) * s)
            t[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2] = 1
    return t


def write(dir_, prefix, images, labels):
    with open(os.path.join(dir_, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())
    with open(os.path.join(dir_, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--train", type=int, default=12000)
    ap.add_argument("--test", type=int, default=2000)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(12345)
    templates = [strokes(rng) for _ in range(10)]
    write(args.dir, "train", *make(args.train, rng, templates))
    write(args.dir, "t10k", *make(args.test, rng, templates))


if __name__ == "__main__":
    main()
