"""Mixed precision on the CPU, side by side in one run: syslab's float32 and
bf16 (`lm_bench`, the CS336 small preset, batch 4) against PyTorch's float32
and CPU autocast bf16 on the same model (bench/torch_lm.py), and the image
transformer's training in float32 and bf16.

    bench/venv.sh && BENCH_VENV=.bench-venv python3 bench/lm_precision.py [context ...]

SYSLAB_BIN names the binary (default build/syslab). Without BENCH_VENV only
syslab's side runs. Prints the tables and the ratios the mixed-precision
figures of docs/performance.md quote, and the share of the bf16 peak the
language model's training step reaches (PEAK_GFLOPS, default 468: two
cores of 234 GFLOP/s of vdpbf16ps, docs/kernels.md).
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSLAB = os.environ.get("SYSLAB_BIN", os.path.join(ROOT, "build", "syslab"))
SMALL = dict(vocab=10000, d=768, ff=3072, layers=12, heads=12)   # engine/graph/lm.c


def run_syslab(script):
    with tempfile.NamedTemporaryFile("w", suffix=".sl", delete=False) as f:
        f.write(script)
    try:
        r = subprocess.run([SYSLAB, "run", f.name], capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return r.stdout


def table_rows(text):
    """the rows of every table syslab printed, as dicts"""
    rows, header = [], None
    for line in text.splitlines():
        cells = line.split()
        if not cells or re.match(r"\(\d+ rows?\)", line):
            header = None
        elif header is None:
            header = cells
        elif len(cells) == len(header):
            rows.append(dict(zip(header, cells)))
    return rows


def train_flops(T, batch=4, s=SMALL):
    """forward+backward FLOPs of one step: 3 x the forward's products"""
    D, F, L, V = s["d"], s["ff"], s["layers"], s["vocab"]
    per_token = 2 * (L * (4 * D * D + 3 * D * F) + D * V) + L * 2 * 2 * T * D
    return 3 * per_token * batch * T


def main():
    contexts = [int(c) for c in sys.argv[1:]] or [128, 256]
    clist = "[" + ", ".join(map(str, contexts)) + "]"
    load = os.getloadavg()[0]
    print(f"load average at the start: {load:.2f}")
    ours = {}
    for precision in ("fp32", "bf16"):
        out = run_syslab(f'print (lm_bench presets=["small"] contexts={clist} warmups=[1] steps=3 batch=4 '
                         f'precision={precision})\n')
        for r in table_rows(out):
            ours[(precision, int(r["context"]))] = (float(r["mean_s_fwd"]), float(r["mean_s_train"]))
    theirs = {}
    venv = os.environ.get("BENCH_VENV")
    if venv:
        r = subprocess.run([os.path.join(venv, "bin", "python"), os.path.join(ROOT, "bench", "torch_lm.py"), "small"]
                           + [str(c) for c in contexts], capture_output=True, text=True, check=True)
        for line in r.stdout.splitlines():
            if line.startswith("RESULT torch"):
                _, _, precision, T, f, fb = line.split()
                theirs[(precision, int(T))] = (float(f), float(fb))
            elif line.startswith("torch"):
                print(line)
    vit = {}
    for width, heads, n in ((64, 2, 12000), (256, 4, 3000)):
        spec = f"depth=2 width={width} heads={heads} mlp_ratio=2 patch=7 dropout=0.1 seed=1"
        out = run_syslab(f"data = dataset fashion_mnist train={n} test=100\n"
                         f"a = model transformer {spec}\n"
                         f"b = precision (model transformer {spec}) bf16\n"
                         "for i in 1..2 {\n"
                         "  print (train a data epochs=1 batch=128 lr=0.002 optimizer=adamw)\n"
                         "  print (train b data epochs=1 batch=128 lr=0.002 optimizer=adamw)\n"
                         "}\n")
        secs = [float(r["seconds"]) for r in table_rows(out)]
        vit[width] = (min(secs[0::2]), min(secs[1::2]), n)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}\n")
    peak = float(os.environ.get("PEAK_GFLOPS", 468))
    print("language model small, batch 4, one warm-up step, mean of 3 steps (seconds)")
    print("context  side    fp32 fwd  bf16 fwd  fp32 f+b  bf16 f+b  bf16/fp32 f+b speed-up  bf16 GFLOP/s (of peak)")
    for T in contexts:
        for side, d in (("syslab", ours), ("torch", theirs)):
            if ("fp32", T) not in d:
                continue
            (f32, fb32), (f16, fb16) = d[("fp32", T)], d[("bf16", T)]
            g = train_flops(T) / fb16 / 1e9
            print(f"{T:7d}  {side:6s}  {f32:8.3f}  {f16:8.3f}  {fb32:8.3f}  {fb16:8.3f}  {fb32 / fb16:22.2f}x"
                  f"  {g:6.1f} ({g / peak:.0%})")
        if ("bf16", T) in theirs:
            print(f"{T:7d}  syslab bf16 against torch autocast bf16, forward+backward: "
                  f"{theirs[('bf16', T)][1] / ours[('bf16', T)][1]:.2f}x; forward: "
                  f"{theirs[('bf16', T)][0] / ours[('bf16', T)][0]:.2f}x; "
                  f"against torch fp32 forward+backward: {theirs[('fp32', T)][1] / ours[('bf16', T)][1]:.2f}x")
    print("\nimage transformer, depth 2, patch 7, AdamW, batch 128, one epoch (best of 2, seconds)")
    for width, (s32, s16, n) in vit.items():
        print(f"width {width:3d}, {n} images: fp32 {s32:.3f}  bf16 {s16:.3f}  speed-up {s32 / s16:.2f}x")


if __name__ == "__main__":
    main()
