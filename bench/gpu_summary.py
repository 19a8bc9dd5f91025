#!/usr/bin/env python3
"""gpu_summary.py - the GPU figures of one `make gpu-check` run as Markdown.

    python3 bench/gpu_summary.py OUT > OUT/summary.md   (bench/gpu_check.sh runs it)

Reads what that run wrote into OUT: syslab's tables (machine.csv,
gemm.csv, attention_forward.csv, attention_causal.csv, attention_train.csv,
attention_bf16.csv, mxint8.csv, from bench/gpu.sl; lm_fp32.csv and lm_bf16.csv, from
bench/gpu_lm.sl) and PyTorch's rows of the same run (anchors.csv, from
bench/torch_gpu.py; lm_anchors.csv, from bench/torch_lm_gpu.py), and sets
each kernel beside its anchor and its roof: the ratios of the GPU issue's targets, and the
fraction of the measured roofs (cuBLAS sgemm at n = 8192 and PyTorch's bf16
matmul for arithmetic, the device-to-device copy for bandwidth) and of the
datasheet's (about 67 TFLOP/s float32 without tensor cores, 990 dense bf16,
4.8 TB/s on an H200, 3.35 on an H100).
"""
import csv
import os
import sys

DATASHEET = {"H200": (67e3, 990e3, 4800.0), "H100": (67e3, 990e3, 3350.0)}


def load(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def pick(rows, kernel, size, causal=None):
    for r in rows:
        if r["kernel"] == kernel and int(r["size"]) == size and (causal is None or int(r.get("causal", 0)) == causal):
            return r
    return None


def num(r, key):
    return float(r[key]) if r and r.get(key) not in (None, "") else float("nan")


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def f(x, spec):
    return "-" if x != x else format(x, spec)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_summary.py OUT")
    out = sys.argv[1]
    machine = {r["property"]: r for r in load(out, "machine.csv")}
    gemm, mx, anchors = load(out, "gemm.csv"), load(out, "mxint8.csv"), load(out, "anchors.csv")
    gpu = machine.get("gpu", {}).get("value", "no GPU")
    print("# GPU check\n")
    print(f"GPU: {gpu}\n")
    if not gemm:
        print("No kernel benchmarks in this run (see bench.log).\n")
        lm_section(out, float("nan"), float("nan"))
        return
    sheet = next((v for k, v in DATASHEET.items() if k in gpu), None)
    cublas_peak = num(pick(gemm, "gemm_cublas", 8192), "gflops")
    bf16_peak = num(pick(anchors, "torch_matmul_bf16", 8192), "gflops")
    copy_rows = [r for r in gemm + mx if r["kernel"] == "copy_cuda"]
    copy_peak = max((num(r, "gbs") for r in copy_rows), default=float("nan"))
    print("## Roofs measured in this run\n")
    rows = [["float32 sgemm (cuBLAS, n = 8192)", f(cublas_peak, ",.0f") + " GFLOP/s",
             f(cublas_peak / sheet[0], ".0%") if sheet else "-"],
            ["bf16 matmul (PyTorch, n = 8192, tensor cores)", f(bf16_peak, ",.0f") + " GFLOP/s",
             f(bf16_peak / sheet[1], ".0%") if sheet else "-"],
            ["device-to-device copy (read + write)", f(copy_peak, ",.0f") + " GB/s",
             f(copy_peak / sheet[2], ".0%") if sheet else "-"]]
    table(["roof", "measured", "share of the datasheet"], rows)

    print("## GEMM, float32\n")
    rows = []
    for n in (1024, 2048, 4096, 8192):
        g = {k: num(pick(gemm, k, n), "gflops") for k in ("gemm_cuda_naive", "gemm_cuda_tiled_v1", "gemm_cuda_tiled",
                                                         "gemm_cublas", "gemm_cublas_direct")}
        t = num(pick(anchors, "torch_matmul_f32", n), "gflops")
        rows.append([str(n)] + [f(g[k], ",.0f") for k in g] + [f(t, ",.0f"),
                    f(g["gemm_cublas"] / g["gemm_cublas_direct"], ".3f"), f(g["gemm_cublas"] / t, ".3f"),
                    f(g["gemm_cuda_tiled"] / g["gemm_cublas"], ".2f"), f(g["gemm_cublas"] / cublas_peak, ".2f")])
    table(["n", "naive", "tiled v1", "tiled", "cuBLAS via syslab", "cuBLAS direct", "torch.matmul", "syslab / direct",
           "syslab / torch", "tiled / cuBLAS", "cuBLAS / roof"], rows)

    for name, title, anchor, causal in (("attention_forward.csv", "Attention forward", "torch_sdpa", 0),
                                        ("attention_causal.csv", "Attention forward, causal", "torch_sdpa", 1),
                                        ("attention_train.csv", "Attention forward and backward", "torch_sdpa_train",
                                         0)):
        att = load(out, name)
        if not att:
            continue
        print(f"## {title} (batch 1, 16 heads, head dim 64, float32; GFLOP/s, memory MiB)\n")
        rows = []
        for L in sorted({int(r["size"]) for r in att}):
            naive = pick(att, "attention_cuda_naive_train" if "train" in name else "attention_cuda_naive", L)
            fused = pick(att, "attention_cuda_fused_train" if "train" in name else "attention_cuda_fused", L)
            v1 = pick(att, "attention_cuda_fused_v1_train" if "train" in name else "attention_cuda_fused_v1", L)
            t = pick(anchors, anchor, L, causal)
            rows.append([str(L), f(num(naive, "median_ms"), ".3f"), f(num(v1, "median_ms"), ".3f"),
                         f(num(fused, "median_ms"), ".3f"),
                         f(num(t, "median_ms"), ".3f"), f(num(naive, "median_ms") / num(fused, "median_ms"), ".2f"),
                         f(num(t, "median_ms") / num(fused, "median_ms"), ".2f"), f(num(fused, "gflops"), ",.0f"),
                         f(num(fused, "gflops") / cublas_peak, ".2f"), f(num(naive, "peak_mib"), ",.0f"),
                         f(num(fused, "peak_mib"), ",.0f")])
        table(["L", "naive ms", "fused v1 ms", "fused ms", "PyTorch SDPA ms", "fused speed-up over naive",
               "PyTorch time / fused time", "fused GFLOP/s", "fused / sgemm roof", "naive MiB", "fused MiB"], rows)

    tc = load(out, "attention_bf16.csv")
    if tc:
        print("## Attention on the tensor cores (bf16, batch 1, 16 heads, head dim 128; target 300 TFLOP/s forward "
              "at L = 4096)\n")
        rows = []
        for L in sorted({int(r["size"]) for r in tc}):
            for ours_name, anchor, what in (("attention_cuda_fused_bf16", "torch_sdpa_bf16_d128", "forward"),
                                            ("attention_cuda_fused_bf16_train", "torch_sdpa_bf16_d128_train",
                                             "forward+backward")):
                ours, t = pick(tc, ours_name, L), pick(anchors, anchor, L)
                rows.append([str(L), what, f(num(ours, "median_ms"), ".3f"), f(num(t, "median_ms"), ".3f"),
                             f(num(ours, "gflops") / 1e3, ".1f"), f(num(t, "gflops") / 1e3, ".1f"),
                             f(num(t, "median_ms") / num(ours, "median_ms"), ".2f"),
                             f(num(ours, "gflops") / bf16_peak, ".2f")])
        table(["L", "pass", "syslab ms", "PyTorch SDPA ms", "syslab TFLOP/s", "PyTorch TFLOP/s",
               "PyTorch time / syslab time", "syslab / bf16 roof"], rows)

    if mx:
        print("## MXINT8 decoding against the device-to-device copy\n")
        rows = []
        for n in sorted({int(r["size"]) for r in mx}):
            c, d = pick(mx, "copy_cuda", n), pick(mx, "mxint8_cuda_dequant", n)
            rows.append([f"{n:,}", f(num(c, "gbs"), ",.0f"), f(num(d, "gbs"), ",.0f"),
                         f(num(d, "gbs") / num(c, "gbs"), ".2f"), f(num(d, "gbs") / copy_peak, ".2f")])
        table(["values", "copy GB/s", "decode GB/s", "decode / copy (target 0.70)", "decode / copy roof"], rows)
    lm_section(out, cublas_peak, bf16_peak)


SHAPES = {  # d_model, d_ff, layers, vocab (engine/graph/lm.c)
    "tiny": (64, 128, 2, 10000), "small": (768, 3072, 12, 10000), "medium": (1024, 4096, 24, 10000),
    "large": (1280, 5120, 36, 10000), "xl": (1600, 6400, 48, 10000), "2.7B": (2560, 10240, 32, 10000)}


def lm_flops(config, T, batch=4):
    """a training step's FLOPs as lm_precision.py counts them: 6 x the products' multiply-adds per token
    (the layers' projections, the attention's two products over the whole T x T, the output projection)"""
    d, ff, layers, vocab = SHAPES[config]
    return 6.0 * batch * T * (layers * (4 * d * d + 3 * d * ff + 2 * T * d) + d * vocab)


def lm_section(out, f32_peak, bf16_peak):
    """syslab's lm_bench on the device beside PyTorch eager and compiled, with the model FLOPs utilisation"""
    ours = {"fp32": load(out, "lm_fp32.csv"), "bf16": load(out, "lm_bf16.csv")}
    torch = load(out, "lm_anchors.csv")
    if not ours["fp32"] and not ours["bf16"]:
        return
    print("## Language models, batch 4, forward+backward (seconds a step; MFU against the measured peak)\n")

    def anchor(impl, config, T, precision):
        r = next((r for r in torch if r["impl"] == impl and r["config"] == config and int(r["context"]) == T
                  and r["precision"] == precision), None)
        return num(r, "mean_s_train") if r and r.get("status_train") == "OK" else float("nan")

    rows = []
    for precision, peak in (("fp32", f32_peak), ("bf16", bf16_peak)):
        for r in ours[precision]:
            config, T = r["config"], int(float(r["context"]))
            if r.get("status_train") != "OK":
                rows.append([config, str(T), precision, "OOM"] + ["-"] * 6)
                continue
            t = num(r, "mean_s_train")
            eager, comp = anchor("torch_eager", config, T, precision), anchor("torch_compile", config, T, precision)
            mfu = lm_flops(config, T) / t / 1e9 / peak if config in SHAPES else float("nan")
            rows.append([config, str(T), precision, f(t, ".4f"), f(eager, ".4f"), f(comp, ".4f"), f(eager / t, ".2f"),
                         f(comp / t, ".2f"), f(mfu, ".0%"), f(num(r, "mean_s_fwd"), ".4f")])
    table(["model", "context", "precision", "syslab", "PyTorch eager", "PyTorch compiled", "eager / syslab",
           "compiled / syslab", "syslab MFU", "syslab forward"], rows)


if __name__ == "__main__":
    main()
