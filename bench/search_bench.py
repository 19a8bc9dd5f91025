"""Sampler overhead per trial: syslab's search beside Optuna 4.2 (from the
test venv) on the same search space with a trivial objective, in one run.

    make build venv
    .venv/bin/python bench/search_bench.py [--runs 2] [--trials 100 1000]

The space has five parameters (a float, a log float, an int, a stepped int,
a three-way categorical); the objective only adds them up, so the time is
the sampler's and the study's own. syslab's figure is the search command's
own wall time (the study's `elapsed` field: sampling, running the block,
bookkeeping) over N; Optuna's is study.optimize with N trials, over N.
The median of --runs runs is reported.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
ROOT = pathlib.Path(__file__).resolve().parents[1]
SYSLAB = os.environ.get("SYSLAB_BIN", str(ROOT / "build" / "syslab"))

BODY = """
  x = suggest "x" float (-5) 5
  y = suggest "y" float 1e-4 1 log=true
  n = suggest "n" int 1 100
  k = suggest "k" int 0 64 by=8
  c = suggest "c" categorical ["a", "b", "c"]
  cb = 0
  if c == "b" { cb = 1 }
  objective x * x + y + n + k + cb
"""


def objective(t):
    x = t.suggest_float("x", -5, 5)
    y = t.suggest_float("y", 1e-4, 1, log=True)
    n = t.suggest_int("n", 1, 100)
    k = t.suggest_int("k", 0, 64, step=8)
    c = t.suggest_categorical("c", ["a", "b", "c"])
    return x * x + y + n + k + (c == "b")


def syslab_seconds(sampler, trials, tmp):
    """the search command's own wall time (s.elapsed), sampling and bookkeeping included"""
    script = pathlib.Path(tmp) / f"{sampler}_{trials}.syslab"
    script.write_text(f"s = search trials={trials} sampler={sampler} seed=1 pruner=none {{{BODY}}}\nprint s.elapsed\n")
    r = subprocess.run([SYSLAB, "run", str(script)], check=True, capture_output=True, text=True)
    return float(r.stdout.split()[-1])


def optuna_seconds(sampler, trials):
    s = optuna.samplers.RandomSampler(seed=1) if sampler == "random" else optuna.samplers.TPESampler(seed=1)
    study = optuna.create_study(sampler=s)
    t0 = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--trials", type=int, nargs="+", default=[100, 1000])
    args = ap.parse_args()
    print(f"optuna {optuna.__version__}; median of {args.runs} runs; per-trial times in ms")
    print("| sampler | trials | syslab per trial | Optuna per trial | ratio Optuna / syslab |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for sampler in ["random", "tpe"]:
            for n in args.trials:
                ours, theirs = [], []
                for _ in range(args.runs):
                    ours.append(syslab_seconds(sampler, n, tmp) / n)
                    theirs.append(optuna_seconds(sampler, n) / n)
                a, b = statistics.median(ours), statistics.median(theirs)
                print(f"| {sampler} | {n} | {a * 1e3:.4f} | {b * 1e3:.3f} | {b / a:.0f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
