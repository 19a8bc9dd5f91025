"""PyTorch side of bench/bench_speed.c: the same MLP and image transformer,
batch, optimizer, data and threads, timed the same way (training steps of an
epoch, evaluation excluded).

    .bench-venv/bin/python bench/torch_train.py [epochs] [mlp|transformer|all]

bench/bench_speed.c runs it beside its own runs when BENCH_VENV is set and
prints the ratios; each result ends in a line "RESULT key parameters
samples/s" for it.

Needs torch and numpy in the bench venv (never in the test venv). Prints the
parameter counts so they can be checked against syslab's (`params m`).
"""
import gzip
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load():
    x = idx("train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255
    y = idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    tx = idx("t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255
    ty = idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    mean, std = x.mean(), x.std()
    return [torch.from_numpy(a) for a in ((x - mean) / std, y, (tx - mean) / std, ty)]


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.classifier = nn.Linear(784, 256), nn.Linear(256, 128), nn.Linear(128, 10)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        x = self.drop(F.relu(self.fc2(x)))
        return self.classifier(x)


class Layer(nn.Module):
    """bert-tiny's encoder layer, as syslab's transformer builds it (post-norm)."""

    def __init__(self, d, heads, ratio, p):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, d * ratio), nn.Linear(d * ratio, d)
        self.heads, self.drop = heads, nn.Dropout(p)

    def forward(self, x):
        B, T, D = x.shape
        h = self.heads
        q, k, v = (f(x).view(B, T, h, D // h).transpose(1, 2) for f in (self.q, self.k, self.v))
        p = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // h), dim=-1))
        c = (p @ v).transpose(1, 2).reshape(B, T, D)
        x = self.ln1(self.drop(self.o(c)) + x)
        return self.ln2(self.drop(self.fc2(F.gelu(self.fc1(x)))) + x)


class Vit(nn.Module):
    def __init__(self, patch=7, d=64, depth=2, heads=2, ratio=2, p=0.1):
        super().__init__()
        self.patch, T = patch, (28 // patch) ** 2
        self.embed = nn.Linear(patch * patch, d)
        self.pos = nn.Parameter(torch.randn(T, d) * 0.02)
        self.ln, self.drop = nn.LayerNorm(d), nn.Dropout(p)
        self.layers = nn.ModuleList(Layer(d, heads, ratio, p) for _ in range(depth))
        self.pool, self.classifier = nn.Linear(d, d), nn.Linear(d, 10)

    def forward(self, x):
        P = self.patch
        x = x.view(-1, 28 // P, P, 28 // P, P).permute(0, 1, 3, 2, 4).reshape(x.shape[0], -1, P * P)
        x = self.drop(self.ln(self.embed(x) + self.pos))
        for layer in self.layers:
            x = layer(x)
        return self.classifier(self.drop(torch.tanh(self.pool(x.mean(1)))))


def train(key, name, model, opt, sched, data, epochs, batch=128):
    x, y, tx, ty = data
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(0)
    best = 0
    for e in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=g)
        t0 = time.perf_counter()
        for s in range(0, len(x), batch):
            i = order[s:s + batch]
            loss = F.cross_entropy(model(x[i]), y[i])
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
            if sched:
                sched.step()
        sps = len(x) / (time.perf_counter() - t0)
        best = max(best, sps)
        model.eval()
        with torch.no_grad():
            acc = (model(tx).argmax(1) == ty).float().mean().item()
        print(f"  {name} epoch {e + 1}: {sps:.0f} samples/s, test accuracy {acc:.4f}", flush=True)
    print(f"{name}: {params} parameters, {best:.0f} samples/s (best epoch), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", flush=True)
    # read by bench/bench_speed.c, which runs this script beside its own models
    print(f"RESULT {key} {params} {best:.1f}", flush=True)


def cosine(opt, total, warmup=0):
    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * t))
    return torch.optim.lr_scheduler.LambdaLR(opt, f)


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(0)
    data = load()
    steps = epochs * math.ceil(len(data[0]) / 128)
    if which != "transformer":
        m = Mlp()
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        train("mlp_sgd", "mlp 784-256-128-10, SGD", m, opt, cosine(opt, steps), data, epochs)
        m = Mlp()
        opt = torch.optim.AdamW(m.parameters(), lr=0.001, weight_decay=1e-4)
        train("mlp_adamw", "mlp 784-256-128-10, AdamW", m, opt, cosine(opt, steps), data, epochs)
    if which != "mlp":
        m = Vit()
        opt = torch.optim.AdamW(m.parameters(), lr=0.002, weight_decay=0.01)
        train("transformer", "transformer 2x64, 2 heads, AdamW", m, opt, cosine(opt, steps, 200), data, epochs)


if __name__ == "__main__":
    main()
