#!/usr/bin/env python3
"""torch_gpu.py - PyTorch's rows beside syslab's GPU benchmarks, in the same run.

    python3 bench/torch_gpu.py OUT/anchors.csv      (bench/gpu_check.sh runs it)

The same shapes as bench/gpu.sl: torch.matmul in float32 with TF32 off
(what cublasSgemm computes) for n = 1024 ... 8192; scaled_dot_product_attention
in float32, batch 1, 16 heads, head dim 64, forward and forward+backward,
L = 1024 ... 16384, causal and not, and in bf16 at head dim 128 (forward, forward+backward); a device-to-device copy (the bandwidth
anchor); and a bf16 matmul at n = 8192 (the tensor cores' measured roof).
Each row is the median of 10 timed runs after 3 warm-ups, timed with CUDA
events as syslab times its own kernels. FLOPs are counted as syslab counts
them: 2 n^3 for a product, 4 B H L^2 d for the attention forward, 3.5 times
that for forward+backward, times (L + 1) / 2L under the causal mask.
"""
import csv
import statistics
import sys

import torch
import torch.nn.functional as F

REPS, WARMUP = 10, 3


def timed(fn):
    """median milliseconds of fn over REPS runs, each between two events"""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_gpu.py OUT.csv")
    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: PyTorch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    rows = []

    def add(kind, size, causal, ms, flops=0.0, nbytes=0.0):
        rows.append({"kernel": kind, "size": size, "causal": int(causal), "median_ms": round(ms, 4),
                     "gflops": round(flops / ms / 1e6, 2) if flops else 0,
                     "gbs": round(nbytes / ms / 1e6, 2) if nbytes else 0})
        print(rows[-1], flush=True)

    for n in (1024, 2048, 4096, 8192):
        a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
        add("torch_matmul_f32", n, False, timed(lambda: torch.matmul(a, b)), 2.0 * n ** 3)
        del a, b
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    add("torch_matmul_bf16", n, False, timed(lambda: torch.matmul(a, b)), 2.0 * n ** 3)
    del a, b
    for count in (16777216, 67108864, 268435456):
        src, dst = torch.randn(count, device=dev), torch.empty(count, device=dev)
        add("torch_copy", count, False, timed(lambda: dst.copy_(src)), 0.0, 8.0 * count)
        del src, dst

    heads, dim = 16, 64
    for causal in (False, True):
        for L in (1024, 2048, 4096, 8192, 16384):
            q, k, v = (torch.randn(1, heads, L, dim, device=dev, requires_grad=True) for _ in range(3))
            flops = 4.0 * heads * L * L * dim * ((L + 1) / (2 * L) if causal else 1.0)
            add("torch_sdpa", L, causal, timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), flops)
            dout = torch.randn(1, heads, L, dim, device=dev)

            def step():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                o.backward(dout)
            add("torch_sdpa_train", L, causal, timed(step), 3.5 * flops)
            del q, k, v, dout
            torch.cuda.empty_cache()

    # bf16 at head dim 128 (FlashAttention's kernels behind SDPA): the anchor of the tensor-core forward
    for L in (1024, 2048, 4096, 8192, 16384):
        q, k, v = (torch.randn(1, heads, L, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        flops = 4.0 * heads * L * L * 128
        add("torch_sdpa_bf16_d128", L, False, timed(lambda: F.scaled_dot_product_attention(q, k, v)), flops)
        dout = torch.randn(1, heads, L, 128, device=dev, dtype=torch.bfloat16)

        def step_bf16():
            F.scaled_dot_product_attention(q, k, v).backward(dout)
        add("torch_sdpa_bf16_d128_train", L, False, timed(step_bf16), 3.5 * flops)
        del q, k, v, dout
        torch.cuda.empty_cache()

    with open(sys.argv[1], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
