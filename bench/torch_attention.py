#!/usr/bin/env python3
"""torch_attention.py - syslab's fused and naive attention beside PyTorch's
CPU scaled_dot_product_attention, in one run.

    bench/venv.sh                                   # once: .bench-venv with torch
    cmake --build build --target bench_kernels
    .bench-venv/bin/python bench/torch_attention.py [--lengths 1024 2048 4096] [--reps 5] [--rounds 2] [--cpu-time]

Shapes: batch 1, 8 heads, head dim 64, float32, 2 threads (torch.set_num_threads
and SYSLAB_THREADS), wall clock. Forward, and forward+backward (loss =
sum(O * dO) with a fixed dO). For each L, in each of --rounds rounds, the
script runs build/bench_kernels csv for that L (syslab's fused and
naive versions, median of --reps after a warm-up) and then times PyTorch
the same way, so that both sides of a ratio are measured within seconds of
each other; each side keeps its best median over the rounds (a machine
shared with other jobs only ever slows a run down). It prints the ratios
and the fraction of the sgemm peak each reaches; the peak is the faster of
torch.matmul (MKL) and syslab's blocked sgemm at n = 1024, timed by the
same clock in the same run. FLOPs are counted the same for every
implementation: 4 B H L^2 d forward, 3.5 times that for forward+backward.
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def time_torch(L, train, reps, threads, clock):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shape = (1, 8, L, 64)
    q, k, v = (torch.randn(shape, requires_grad=train) for _ in range(3))
    grad = torch.randn(shape)

    def step():
        if train:
            for t in (q, k, v):
                t.grad = None
            o = F.scaled_dot_product_attention(q, k, v)
            o.backward(grad)
        else:
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v)

    step()
    times = []
    for _ in range(reps):
        t0 = clock()
        step()
        times.append(clock() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="alternate syslab and torch this many times per L")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bench_kernels"))
    ap.add_argument("--cpu-time", action="store_true",
                    help="one thread, timed by process CPU time on both sides (a machine other jobs keep busy)")
    args = ap.parse_args()
    clock = time.perf_counter
    if args.cpu_time:
        args.threads, clock = 1, time.process_time

    load = os.getloadavg()[0]
    print(f"load average {load:.2f}{'  (busy: do not record)' if load > 0.7 else ''}")
    print(f"torch {torch.__version__}, {args.threads} threads, batch 1, 8 heads, dim 64")
    env = dict(os.environ, SYSLAB_THREADS=str(args.threads))
    if args.cpu_time:
        env["SYSLAB_BENCH_CLOCK"] = "cpu"
        print("clock: process CPU time, one thread")

    def run_ours(L):
        out = subprocess.run([args.bench, "csv", str(L)], env=env, check=True, capture_output=True, text=True).stdout
        return {(r["impl"], r["pass"], int(r["L"])): r for r in csv.DictReader(io.StringIO(out))}

    # each side's best median over the rounds, the rounds alternating syslab and torch
    ours, theirs = {}, {}
    for L in args.lengths:
        for _ in range(args.rounds):
            for key, r in run_ours(L).items():
                if key not in ours or float(r["median_s"]) < float(ours[key]["median_s"]):
                    ours[key] = r
            for train in (False, True):
                t = time_torch(L, train, args.reps, args.threads, clock)
                theirs[L, train] = min(t, theirs.get((L, train), t))
    # the peak: the faster of torch's matmul (MKL) and syslab's blocked sgemm at n = 1024, by the same clock
    torch.set_num_threads(args.threads)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a @ b
    mm = []
    for _ in range(10):
        t0 = clock()
        a @ b
        mm.append(clock() - t0)
    torch_mm = 2 * 1024**3 / statistics.median(mm) / 1e9
    blocked = float(ours[("blocked", "gemm", 1024)]["gflops"])
    peak = max(torch_mm, blocked)
    print(f"sgemm at n = 1024: torch.matmul {torch_mm:.1f}, syslab blocked {blocked:.1f} GFLOP/s; peak {peak:.1f}")
    print(f"{'L':>5} {'pass':17} {'torch ms':>9} {'fused ms':>9} {'naive ms':>9} {'torch/fused':>11} "
          f"{'naive/fused':>11} {'torch %pk':>9} {'fused %pk':>9} {'naive %pk':>9}")
    for L in args.lengths:
        for train, name in ((False, "forward"), (True, "forward+backward")):
            t = theirs[L, train]
            flops = 4.0 * 8 * L * L * 64 * (3.5 if train else 1.0)
            f = float(ours[("fused", name, L)]["median_s"])
            n = float(ours[("naive", name, L)]["median_s"])
            pk = lambda s: 100 * flops / s / 1e9 / peak
            print(f"{L:5d} {name:17} {t * 1e3:9.2f} {f * 1e3:9.2f} {n * 1e3:9.2f} {t / f:11.2f} {n / f:11.2f} "
                  f"{pk(t):8.0f}% {pk(f):8.0f}% {pk(n):8.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
