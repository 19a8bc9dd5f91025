#!/usr/bin/env python3
"""torch_gpu.py - PyTorch's rows beside syslab's GPU benchmarks, in the same run.

    python3 bench/torch_gpu.py OUT/anchors.csv      (bench/gpu_check.sh runs it)

The same shapes as bench/gpu.sl: torch.matmul in float32 with TF32 off
(what cublasSgemm computes) for n = 1024 ... 8192; scaled_dot_product_attention
in float32, batch 1, 16 heads, head dim 64, forward and forward+backward,
L = 1024 ... 16384, causal and not, and in bf16 at head dim 128 (forward, forward+backward); a device-to-device copy (the bandwidth
anchor); bf16 matmuls at n = 2048 ... 8192 (the one at 8192: the tensor
cores' measured roof) and the linear layer under bf16 autocast, beside
syslab's bf16 rows. TORCH_ROWS names the groups to measure (gemm, roofs,
bf16, attention, attention_bf16; all by default): bench/gpu_first.sh asks
for the few its one command needs. Each row is written to the CSV as it is
measured.
Each row is the median of 10 timed runs after 3 warm-ups, timed with CUDA
events as syslab times its own kernels. FLOPs are counted as syslab counts
them: 2 n^3 for a product, 4 B H L^2 d for the attention forward, 3.5 times
that for forward+backward, times (L + 1) / 2L under the causal mask.
"""
import csv
import os
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


GROUPS = ("gemm", "roofs", "bf16", "attention", "attention_bf16")
FIELDS = ["kernel", "size", "causal", "median_ms", "gflops", "gbs"]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_gpu.py OUT.csv")
    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: PyTorch sees no GPU")
    # TORCH_ROWS chooses the groups of rows (all by default); TORCH_ATTN_SIZES the bf16 attention's lengths
    groups = os.environ.get("TORCH_ROWS", " ".join(GROUPS)).split()
    attn_sizes = [int(x) for x in os.environ.get("TORCH_ATTN_SIZES", "1024 2048 4096 8192 16384").split()]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    # each row is written as it is measured, so that a run cut short keeps what it measured
    f = open(sys.argv[1], "w", newline="")
    w = csv.DictWriter(f, fieldnames=FIELDS)
    w.writeheader()
    f.flush()

    def add(kind, size, causal, ms, flops=0.0, nbytes=0.0):
        row = {"kernel": kind, "size": size, "causal": int(causal), "median_ms": round(ms, 4),
               "gflops": round(flops / ms / 1e6, 2) if flops else 0, "gbs": round(nbytes / ms / 1e6, 2) if nbytes else 0}
        w.writerow(row)
        f.flush()
        print(row, flush=True)

    if "gemm" in groups:
        for n in (1024, 2048, 4096, 8192):
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
            add("torch_matmul_f32", n, False, timed(lambda: torch.matmul(a, b)), 2.0 * n ** 3)
            del a, b
    # bf16 products: the tensor cores' roof at n = 8192, the smaller ones beside syslab's bf16 rows, and the
    # linear layer under autocast (float32 x, W and b cast to bf16 in each call, as syslab's bf16 models do)
    sizes = ([2048, 4096] if "bf16" in groups else []) + ([8192] if "roofs" in groups or "bf16" in groups else [])
    for n in sizes:
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        add("torch_matmul_bf16", n, False, timed(lambda: torch.matmul(a, b)), 2.0 * n ** 3)
        del a, b
        if "bf16" in groups:
            x, wt, bias = (torch.randn(n, n, device=dev), torch.randn(n, n, device=dev), torch.randn(n, device=dev))

            def linear():
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    F.linear(x, wt, bias)
            add("torch_linear_autocast", n, False, timed(linear), 2.0 * n ** 3)
            del x, wt, bias
    if "roofs" in groups:
        for count in (16777216, 67108864, 268435456):
            src, dst = torch.randn(count, device=dev), torch.empty(count, device=dev)
            add("torch_copy", count, False, timed(lambda: dst.copy_(src)), 0.0, 8.0 * count)
            del src, dst

    heads, dim = 16, 64
    for causal in ((False, True) if "attention" in groups else ()):
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
    for L in (attn_sizes if "attention_bf16" in groups else []):
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
    f.close()
    print("torch", torch.__version__, "device", torch.cuda.get_device_name(), flush=True)


if __name__ == "__main__":
    main()
