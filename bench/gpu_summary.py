#!/usr/bin/env python3
"""gpu_summary.py - the GPU figures of one `make gpu-check` or `make gpu-first` run as Markdown.

    python3 bench/gpu_summary.py TABLES [--tests TESTS_LOG] [--first]   (bench/gpu_check.sh, bench/gpu_first.sh)

Reads what that run wrote into TABLES: syslab's tables (machine.csv,
gemm.csv, gemm_bf16.csv, copy.csv, attention_forward.csv,
attention_causal.csv, attention_train.csv, attention_bf16.csv, mxint8.csv,
from bench/gpu.sl or bench/gpu_first.sl; lm.csv from bench/gpu_lm.sl, or
one lm_PRESET_PRECISION.csv a row from bench/gpu_first.sh) and PyTorch's rows of the same run (anchors.csv, from
bench/torch_gpu.py; lm_anchors.csv and lm_compiled.csv, from bench/torch_lm_gpu.py), and sets
each kernel beside its anchor and its roof: the ratios of the GPU issue's
targets, and the fraction of the measured roofs (cuBLAS sgemm at n = 8192
and PyTorch's bf16 matmul for arithmetic, the device-to-device copy for
bandwidth) and of the datasheet's (about 67 TFLOP/s float32 without tensor
cores, 989 dense bf16, 4.8 TB/s on an H200, 3.35 on an H100). Where the run
measured no roof, the language models' utilisation is against the roofs
recorded on an H200 (docs/performance.md), and the table says so.

With --tests, the losses that tests/unit/test_gpu_graph.c printed (the
same models trained on the CPU and on the GPU) come first: whether the
models train on the GPU and agree with the CPU. --first leaves out the
tables of the full check that the first command does not measure. Every
table names the GPU it ran on (machine.csv, or gpu.txt).
"""
import argparse
import csv
import os
import re

DATASHEET = {"H200": (67e3, 989e3, 4800.0), "H100": (67e3, 989e3, 3350.0)}
# GFLOP/s measured on an H200 (docs/performance.md, GPU): cuBLAS sgemm and PyTorch's bf16 matmul at n = 8192
RECORDED = {"fp32": 50.8e3, "bf16": 772e3}


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


def gpu_of(out):
    machine = {r["property"]: r for r in load(out, "machine.csv")}
    if "gpu" in machine:
        return machine["gpu"]["value"]
    path = os.path.join(out, "gpu.txt")
    return open(path).read().strip() if os.path.exists(path) else "no GPU"


def models_section(tests_log, gpu):
    """the losses test_gpu_graph printed for the same models on both devices: do they train there and agree (a
    model the CPU trained and the GPU never finished shows with no GPU loss)"""
    if not tests_log or not os.path.exists(tests_log):
        return
    rows, cpu_only = [], {}
    for line in open(tests_log, errors="replace"):
        m = re.match(r"\s+(.+?) epoch (\d+) on the cpu: loss ([^,\s]+)", line)
        if m:
            cpu_only[(m.group(1), "epoch " + m.group(2))] = m.group(3)
            continue
        m = re.match(r"\s+(.+?) (epoch|step) (\d+): loss cpu ([^,\s]+) gpu ([^,\s]+)", line)
        if m:
            what, kind, i, cpu, dev = m.groups()
            cpu_only.pop((what, f"{kind} {i}"), None)
            diff = abs(float(dev) - float(cpu)) / (1 + abs(float(cpu)))
            rows.append([what, f"{kind} {i}", cpu, dev, f(diff, ".1e")])
        m = re.match(r"\s+(.+?): weights differ by at most (\S+) \((.+)\)", line)
        if m:
            rows.append([m.group(1), "weights after", "-", "-", f"{float(m.group(2)):.1e} ({m.group(3)})"])
    rows += [[what, after, loss, "none (see tests.log)", "-"] for (what, after), loss in cpu_only.items()]
    print(f"## Models trained on both devices ({gpu}; tests/unit/test_gpu_graph.c)\n")
    if not rows:
        print("No GPU: the models ran on the CPU alone.\n" if gpu == "no GPU" else
              "test_gpu_graph printed no losses (see tests.log).\n")
        return
    table(["model", "after", "loss on the CPU", "loss on the GPU", "difference over (1 + the CPU's loss)"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tests", help="tests.log, for the models' losses on both devices")
    ap.add_argument("--first", action="store_true", help="the first command's tables only")
    args = ap.parse_args()
    out = args.out
    gemm, mx, anchors = load(out, "gemm.csv"), load(out, "mxint8.csv"), load(out, "anchors.csv")
    gpu = gpu_of(out)
    print("# GPU check\n")
    print(f"GPU: {gpu}\n")
    models_section(args.tests, gpu)
    sheet = next((v for k, v in DATASHEET.items() if k in gpu), None)
    cublas_peak = num(pick(gemm, "gemm_cublas", 8192), "gflops")
    bf16_peak = num(pick(anchors, "torch_matmul_bf16", 8192), "gflops")
    lm_section(out, gpu, sheet, cublas_peak, bf16_peak)
    if not gemm:
        print("No kernel benchmarks in this run (see bench.log).\n")
        return
    copy_rows = [r for r in gemm + mx + load(out, "copy.csv") if r["kernel"] == "copy_cuda"]
    copy_peak = max((num(r, "gbs") for r in copy_rows), default=float("nan"))
    print(f"## Roofs measured in this run ({gpu})\n")
    rows = [["float32 sgemm (cuBLAS, n = 8192)", f(cublas_peak, ",.0f") + " GFLOP/s",
             f(cublas_peak / sheet[0], ".0%") if sheet else "-"],
            ["bf16 matmul (PyTorch, n = 8192, tensor cores)", f(bf16_peak, ",.0f") + " GFLOP/s",
             f(bf16_peak / sheet[1], ".0%") if sheet else "-"],
            ["device-to-device copy (read + write)", f(copy_peak, ",.0f") + " GB/s",
             f(copy_peak / sheet[2], ".0%") if sheet else "-"]]
    table(["roof", "measured", "share of the datasheet"], rows)
    bf16_gemm_section(out, gpu, anchors, bf16_peak, sheet)
    if not args.first:
        gemm_section(gemm, anchors, gpu, cublas_peak)
        attention_sections(out, anchors, gpu, cublas_peak)
    tensor_core_section(out, anchors, gpu, bf16_peak)
    head_dims_section(out, gpu, bf16_peak)
    if mx:
        print(f"## MXINT8 decoding against the device-to-device copy ({gpu})\n")
        rows = []
        for n in sorted({int(r["size"]) for r in mx}):
            c, d = pick(mx, "copy_cuda", n), pick(mx, "mxint8_cuda_dequant", n)
            rows.append([f"{n:,}", f(num(c, "gbs"), ",.0f"), f(num(d, "gbs"), ",.0f"),
                         f(num(d, "gbs") / num(c, "gbs"), ".2f"), f(num(d, "gbs") / copy_peak, ".2f")])
        table(["values", "copy GB/s", "decode GB/s", "decode / copy (target 0.70)", "decode / copy roof"], rows)


def gemm_section(gemm, anchors, gpu, cublas_peak):
    print(f"## GEMM, float32 ({gpu})\n")
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


def bf16_gemm_section(out, gpu, anchors, bf16_peak, sheet):
    """syslab's bf16 products (cuBLAS on pre-rounded operands; the linear layer as the graph runs it) beside
    PyTorch's bf16 matmul and its linear layer under autocast, the same shapes"""
    rows16 = load(out, "gemm_bf16.csv")
    if not rows16:
        return
    print(f"## bf16 products on the tensor cores, n x n times n x n ({gpu}; GFLOP/s)\n")
    rows = []
    for n in sorted({int(r["size"]) for r in rows16}):
        ours, lin = num(pick(rows16, "gemm_cublas_bf16", n), "gflops"), num(pick(rows16, "linear_cuda_bf16", n), "gflops")
        t, tl = num(pick(anchors, "torch_matmul_bf16", n), "gflops"), num(pick(anchors, "torch_linear_autocast", n), "gflops")
        rows.append([str(n), f(ours, ",.0f"), f(t, ",.0f"), f(ours / t, ".3f"), f(lin, ",.0f"), f(tl, ",.0f"),
                     f(lin / tl, ".3f"), f(ours / bf16_peak, ".2f"), f(ours / sheet[1], ".0%") if sheet else "-"])
    table(["n", "cuBLAS bf16 via syslab", "torch.matmul bf16", "syslab / torch", "syslab's linear (bf16 model)",
           "torch linear (autocast)", "linear: syslab / torch", "cuBLAS bf16 / bf16 roof", "cuBLAS bf16 / 989 TFLOP/s"],
          rows)


def attention_sections(out, anchors, gpu, cublas_peak):
    for name, title, anchor, causal in (("attention_forward.csv", "Attention forward", "torch_sdpa", 0),
                                        ("attention_causal.csv", "Attention forward, causal", "torch_sdpa", 1),
                                        ("attention_train.csv", "Attention forward and backward", "torch_sdpa_train",
                                         0)):
        att = load(out, name)
        if not att:
            continue
        print(f"## {title} ({gpu}; batch 1, 16 heads, head dim 64, float32; GFLOP/s, memory MiB)\n")
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


def tensor_core_section(out, anchors, gpu, bf16_peak):
    tc = load(out, "attention_bf16.csv")
    if not tc:
        return
    print(f"## Attention on the tensor cores ({gpu}; bf16, batch 1, 16 heads, head dim 128; target 300 TFLOP/s "
          "forward at L = 4096)\n")
    rows = []
    for L in sorted({int(r["size"]) for r in tc}):
        for ours_name, anchor, what in (("attention_cuda_fused_bf16", "torch_sdpa_bf16_d128", "forward"),
                                        ("attention_cuda_fa2_bf16", "torch_sdpa_bf16_d128", "forward, version 2"),
                                        ("attention_cuda_fused_bf16_train", "torch_sdpa_bf16_d128_train",
                                         "forward+backward"),
                                        ("attention_cuda_fa2_bf16_train", "torch_sdpa_bf16_d128_train",
                                         "forward+backward, version 2")):
            ours, t = pick(tc, ours_name, L), pick(anchors, anchor, L)
            rows.append([str(L), what, f(num(ours, "median_ms"), ".3f"), f(num(t, "median_ms"), ".3f"),
                         f(num(ours, "gflops") / 1e3, ".1f"), f(num(t, "gflops") / 1e3, ".1f"),
                         f(num(t, "median_ms") / num(ours, "median_ms"), ".2f"),
                         f(num(ours, "gflops") / bf16_peak, ".2f")])
    table(["L", "pass", "syslab ms", "PyTorch SDPA ms", "syslab TFLOP/s", "PyTorch TFLOP/s",
           "PyTorch time / syslab time", "syslab / bf16 roof"], rows)


def head_dims_section(out, gpu, bf16_peak):
    """version 2 of the tensor-core attention at the head dims beside 128: 80 (the 2.7B model's) and 64"""
    rows = []
    for name, heads, dim in (("attention_bf16_d64.csv", 16, 64), ("attention_bf16_d80.csv", 32, 80)):
        for r in load(out, name):
            rows.append([str(dim), str(heads), r["size"], r["kernel"], f(num(r, "median_ms"), ".3f"),
                         f(num(r, "gflops") / 1e3, ".1f"), f(num(r, "gflops") / bf16_peak, ".2f")])
    if rows:
        print(f"## Attention on the tensor cores at head dims 64 and 80 ({gpu}; bf16, batch 1)\n")
        table(["head dim", "heads", "L", "kernel", "ms", "TFLOP/s", "/ bf16 roof"], rows)


SHAPES = {  # d_model, d_ff, layers, vocab (engine/graph/lm.c)
    "tiny": (64, 128, 2, 10000), "small": (768, 3072, 12, 10000), "medium": (1024, 4096, 24, 10000),
    "large": (1280, 5120, 36, 10000), "xl": (1600, 6400, 48, 10000), "2.7B": (2560, 10240, 32, 10000)}


def lm_flops(config, T, batch=4):
    """a training step's FLOPs as lm_precision.py counts them: 6 x the products' multiply-adds per token
    (the layers' projections, the attention's two products over the whole T x T, the output projection)"""
    d, ff, layers, vocab = SHAPES[config]
    return 6.0 * batch * T * (layers * (4 * d * d + 3 * d * ff + 2 * T * d) + d * vocab)


def lm_rows(out):
    """syslab's lm_bench rows by precision: lm.csv (the full check: both precisions, a column says which), or one
    file a row, lm_PRESET_PRECISION.csv (the first command), in the order of the presets"""
    rows = {"fp32": [], "bf16": []}
    for r in load(out, "lm.csv"):
        rows.setdefault(r.get("precision") or "fp32", []).append(r)
    order = list(SHAPES)
    for name in sorted(os.listdir(out) if os.path.isdir(out) else [],
                       key=lambda n: order.index(n[3:].rsplit("_", 1)[0]) if n[3:].rsplit("_", 1)[0] in order else 99):
        m = re.fullmatch(r"lm_(.+)_([a-z0-9]+)\.csv", name)
        if m:
            rows.setdefault(m.group(2), []).extend(load(out, name))
    return rows


def lm_section(out, gpu, sheet, f32_peak, bf16_peak):
    """syslab's lm_bench on the device beside PyTorch eager and compiled, with the model FLOPs utilisation against
    the measured peak and the datasheet's; without a roof in the run, against the peaks recorded on an H200"""
    ours = lm_rows(out)
    torch = load(out, "lm_anchors.csv") + load(out, "lm_compiled.csv")
    if not any(ours.values()):
        return
    measured = f32_peak == f32_peak and bf16_peak == bf16_peak
    peaks = {"fp32": f32_peak, "bf16": bf16_peak} if measured else RECORDED
    where = "measured in this run" if measured else "recorded on an H200 (docs/performance.md): this run measured none"
    print(f"## Language models ({gpu}), batch 4, forward+backward (seconds a step)\n")
    print(f"MFU: the model's FLOPs a second against the peak {where} (float32: cuBLAS sgemm "
          f"{f(peaks['fp32'] / 1e3, '.1f')} TFLOP/s; bf16: the bf16 matmul {f(peaks['bf16'] / 1e3, '.0f')} TFLOP/s), "
          "and against the datasheet's (67 TFLOP/s float32, 989 bf16).\n")

    def anchor(impl, config, T, precision):
        r = next((r for r in torch if r["impl"] == impl and r["config"] == config and int(r["context"]) == T
                  and r["precision"] == precision), None)
        return num(r, "mean_s_train") if r and r.get("status_train") == "OK" else float("nan")

    rows = []
    for precision in ours:
        peak = peaks.get(precision, float("nan"))
        sheet_peak = (sheet[1] if precision != "fp32" else sheet[0]) if sheet else (989e3 if precision != "fp32" else 67e3)
        for r in ours[precision]:
            config, T = r["config"], int(float(r["context"]))
            status = r.get("status_train", "")
            if status != "OK":   # OOM predicted, or the fault that stopped it
                fwd = f(num(r, "mean_s_fwd"), ".4f") if r.get("status_fwd") == "OK" else "-"
                rows.append([config, str(T), precision, status.replace("|", "/")[:200] or "-"] + ["-"] * 6 + [fwd])
                continue
            t = num(r, "mean_s_train")
            eager, comp = anchor("torch_eager", config, T, precision), anchor("torch_compile", config, T, precision)
            flops = lm_flops(config, T) / t / 1e9 if config in SHAPES else float("nan")
            rows.append([config, str(T), precision, f(t, ".4f"), f(eager, ".4f"), f(comp, ".4f"), f(eager / t, ".2f"),
                         f(comp / t, ".2f"), f(flops / peak, ".0%"), f(flops / sheet_peak, ".0%"),
                         f(num(r, "mean_s_fwd"), ".4f")])
    table(["model", "context", "precision", "syslab", "PyTorch eager", "PyTorch compiled", "eager / syslab",
           "compiled / syslab", "MFU (measured peak)" if measured else "MFU (recorded peak)", "MFU (datasheet)",
           "syslab forward"], rows)


if __name__ == "__main__":
    main()
