#!/usr/bin/env python3
"""torch_lm_gpu.py - PyTorch's rows beside syslab's `lm_bench` on the GPU, in the same run.

    python3 bench/torch_lm_gpu.py OUT/lm_anchors.csv     (bench/gpu_check.sh, step lm)

The CS336 basics language model of bench/torch_lm.py (the same module, the
same shapes as syslab's presets) on the device, timed as `lm_bench` times
it: forward, and forward+backward of the next-token cross-entropy on random
tokens, batch 4, after warm-up steps, each step waited for. Four ways per
row: eager and torch.compile (the presets in COMPILE_PRESETS, default
small and medium: compiling takes a minute or more per model, shape and
precision), float32 (TF32 off: what cuBLAS's sgemm computes) and under
CUDA autocast to bf16. A row that does not fit is
written as OOM, one that fails otherwise with the error; each row is
written to the CSV as it is measured, so a run stopped at its time bound
keeps what it finished. Presets and contexts come from PRESETS and CONTEXTS in the
environment (default: bench/gpu_lm.sl's); DEVICE=cpu runs the same code on
the CPU (a check of this script where there is no GPU: the tiny preset).
"""
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_lm import LM  # noqa: E402

SHAPES = {  # vocab, d_model, d_ff, layers, heads (engine/graph/lm.c)
    "tiny": (10000, 64, 128, 2, 2),
    "small": (10000, 768, 3072, 12, 12),
    "medium": (10000, 1024, 4096, 24, 16),
    "large": (10000, 1280, 5120, 36, 20),
    "xl": (10000, 1600, 6400, 48, 25),
    "2.7B": (10000, 2560, 10240, 32, 32),
}


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, warmups, steps):
    """the warm-up's seconds in all, and the mean of the timed steps, each waited for"""
    s = time.perf_counter()
    for _ in range(warmups):
        fn()
    sync(device)
    warm = time.perf_counter() - s
    t = []
    for _ in range(steps):
        s = time.perf_counter()
        fn()
        sync(device)
        t.append(time.perf_counter() - s)
    return warm, sum(t) / len(t)


def row(device, preset, T, precision, mode, batch, warmups, steps):
    vocab, d, ff, layers, heads = SHAPES[preset]
    torch.manual_seed(0)
    m = LM(vocab, d, ff, layers, heads, T).to(device)
    run = torch.compile(m) if mode == "compile" else m
    ids = torch.randint(0, vocab, (batch, T + 1), device=device)
    x, y = ids[:, :-1], ids[:, 1:]
    cast = dict(device_type=device, dtype=torch.bfloat16, enabled=precision == "bf16")

    def fwd():
        with torch.no_grad(), torch.autocast(**cast):
            run(x)

    def fwd_bwd():
        m.zero_grad(set_to_none=True)
        with torch.autocast(**cast):
            loss = F.cross_entropy(run(x).reshape(-1, vocab).float(), y.reshape(-1))
        loss.backward()

    out = {}
    for name, fn in (("fwd", fwd), ("train", fwd_bwd)):
        try:
            out["warmup_s_" + name], out["mean_s_" + name] = timed(fn, device, warmups, steps)
            out["status_" + name] = "OK"
        except torch.OutOfMemoryError:
            out["status_" + name] = "OOM"
        except Exception as e:  # a row that fails is a row whose status says why; the table goes on
            out["status_" + name] = f"error: {type(e).__name__}: {e}"[:200]
        if device == "cuda":
            torch.cuda.empty_cache()
    del run, m
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "lm_anchors.csv"
    device = os.environ.get("DEVICE", "cuda")
    presets = os.environ.get("PRESETS", "small medium large xl 2.7B").split()
    contexts = [int(c) for c in os.environ.get("CONTEXTS", "128 512").split()]
    modes = os.environ.get("MODES", "eager compile").split()
    # torch.compile takes a minute or more per model, shape and precision: by default only where it is quick
    compiled = os.environ.get("COMPILE_PRESETS", "small medium").split()
    batch, warmups, steps = int(os.environ.get("BATCH", 4)), int(os.environ.get("WARMUPS", 1)), int(os.environ.get("STEPS", 3))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cols = ["impl", "config", "context", "precision", "status_fwd", "status_train", "warmup_s_fwd", "warmup_s_train",
            "mean_s_fwd", "mean_s_train"]
    # each row is written as it is measured: a run stopped at its time bound keeps the rows it finished
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        f.flush()
        for preset in presets:
            for T in contexts:
                for precision in ("fp32", "bf16"):
                    for mode in modes:
                        if mode == "compile" and preset not in compiled:
                            continue
                        r = row(device, preset, T, precision, mode, batch, warmups, steps)
                        r.update(impl="torch_" + mode, config=preset, context=T, precision=precision)
                        w.writerow(r)
                        f.flush()
                        print(" ".join(f"{k}={r.get(k, '')}" for k in cols), flush=True)
    print("torch", torch.__version__, "device", torch.cuda.get_device_name() if device == "cuda" else device)


if __name__ == "__main__":
    main()
