"""Data-parallel training on N ranks of one machine (mpirun, loopback): time
per step and the share of it spent in communication the compute did not
hide, for each way gradients travel (one all-reduce per parameter, one flat
buffer, buckets of several sizes started during the backward), beside the
serial run with accumulate=N (the same numbers, one process); then the
all-reduce's latency and bandwidth (allreduce_bench).

    python3 bench/ddp_bench.py [--ranks 2] [--models transformer,tiny,small]
                               [--buckets 1,5,25,100] [--steps 4] [--image-steps 16]
                               [--repeats 3]

Models: the image transformer of the labs (depth 2, width 64, 28 x 28
images in patches of 7, 10 classes, batch 64, on synthetic data), and the
language model presets tiny and small (batch 4, context 128, random
tokens). Each configuration runs `steps` timed steps after `steps` untimed
ones (the transformer's steps are shorter: `image-steps`); a step's time is the mean of the timed ones, and the communication
share is the time the step spent waiting for gradients or sending them
after its backward pass (comm_seconds) over the step's time. The
configurations of a model run in turn, `repeats` times over, and each keeps
its fastest round (with its communication share): on a machine other jobs
share, the load changes between configurations, and the fastest round is
the one it disturbed least. Prints a Markdown table (docs/performance.md)."""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SYSLAB = os.environ.get("SYSLAB_BIN", str(ROOT / "build" / "syslab"))
MPI = [shutil.which("mpirun") or "mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl",
       "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]


def columns(par):
    return '["seconds", "comm_seconds"]' if "parallel" in par else '["seconds"]'


def image_script(par, steps, out):
    batch = 64
    return (f"d = dataset synthetic train={batch * steps} test=64 features=784 classes=10 seed=1\n"
            "m = model transformer data=d depth=2 width=64 heads=2 mlp_ratio=2 patch=7 seed=2\n"
            f"h = train m d epochs=2 batch={batch} lr=0.001 optimizer=adamw {par}\n"
            # the second epoch is timed: the first made the buffers
            f'save (select h columns={columns(par)}) "{out}"\n')


def lm_script(preset, par, steps, out):
    return (f"m = lm {preset} context=128\n"
            f"h = lm_train m steps={2 * steps} batch=4 context=128 every={steps} lr=0.001 {par}\n"
            f'save (select h columns={columns(par)}) "{out}"\n')


def measure(model, par, ranks, steps, tmp):
    out = tmp / "t.csv"
    code = image_script(par, steps, out) if model == "transformer" else lm_script(model, par, steps, out)
    path = tmp / "b.syslab"
    path.write_text(code)
    cmd = ([*MPI, "-n", str(ranks)] if "parallel" in par else []) + [SYSLAB, "run", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        sys.exit(f"{model} {par}: {r.stderr}")
    rows = [list(map(float, line.split(","))) for line in out.read_text().splitlines()[1:]]
    if model == "transformer":
        seconds, comm = rows[1][0], rows[1][1] if len(rows[1]) > 1 else 0.0   # the second epoch
    else:   # lm_train's seconds and comm_seconds count from the start: the second row less the first
        seconds = rows[1][0] - rows[0][0]
        comm = rows[1][1] - rows[0][1] if len(rows[1]) > 1 else 0.0
    return seconds / steps, comm / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--models", default="transformer,tiny,small")
    ap.add_argument("--buckets", default="1,5,25,100")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--image-steps", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="0.001,0.01,0.1,1,10,100")
    a = ap.parse_args()
    n = a.ranks
    variants = [("serial, accumulate=%d" % n, f"accumulate={n}"),
                ("per parameter", 'parallel="data" reduce="param"'),
                ("flat", 'parallel="data" reduce="flat"')]
    variants += [(f"buckets of {b} MB", f'parallel="data" reduce="bucket" bucket_mb={b}') for b in a.buckets.split(",")]
    variants += [(f"buckets of {a.buckets.split(',')[-1]} MB, optimizer sharded",
                  f'parallel="data" reduce="bucket" bucket_mb={a.buckets.split(",")[-1]} shard_optimizer=true')]
    print(f"| model | gradients travel | ms per step | communication share | vs serial |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for model in a.models.split(","):
            steps = a.image_steps if model == "transformer" else a.steps
            best = {}
            for _ in range(a.repeats):   # the configurations in turn, each keeping its fastest round
                for name, par in variants:
                    step, share = measure(model, par, n, steps, tmp)
                    if name not in best or step < best[name][0]:
                        best[name] = (step, share)
            base = best[variants[0][0]][0]
            for name, _ in variants:
                step, share = best[name]
                print(f"| {model} | {name} | {step * 1e3:.1f} | {share:.1%} | {base / step:.2f}x |", flush=True)
        path = tmp / "a.syslab"
        path.write_text(f"print (allreduce_bench sizes=[{a.sizes}] repeats=10)\n")
        r = subprocess.run([*MPI, "-n", str(n), SYSLAB, "run", str(path)], capture_output=True, text=True, timeout=3600)
        print()
        print(r.stdout if r.returncode == 0 else r.stderr)


if __name__ == "__main__":
    main()
