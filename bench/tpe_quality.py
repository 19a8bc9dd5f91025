"""TPE's search quality against Optuna's: the best value after N trials,
over 20 seeds, on three standard test functions (minimised), in one run.

    make build venv
    .venv/bin/python bench/tpe_quality.py [--seeds 20] [--trials 60]

Both run TPESampler with Optuna 4.2's defaults and the same seeds. The
table gives the mean best value over the seeds with its standard error;
"not worse beyond noise" means syslab's mean is below Optuna's plus two
standard errors of the difference.
"""
import argparse
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
ROOT = pathlib.Path(__file__).resolve().parents[1]
SYSLAB = str(ROOT / "build" / "syslab")

# name, syslab expression, python function, bounds per variable
FUNCTIONS = {
    "sphere (4-d)": ("x0 ** 2 + x1 ** 2 + x2 ** 2 + x3 ** 2",
                     lambda v: sum(x * x for x in v), [(-5.12, 5.12)] * 4),
    "branin": ("(x1 - 5.1 / (4 * 3.141592653589793 ** 2) * x0 ** 2 + 5 / 3.141592653589793 * x0 - 6) ** 2"
               " + 10 * (1 - 1 / (8 * 3.141592653589793)) * cos_x0 + 10",
               lambda v: (v[1] - 5.1 / (4 * math.pi ** 2) * v[0] ** 2 + 5 / math.pi * v[0] - 6) ** 2
               + 10 * (1 - 1 / (8 * math.pi)) * math.cos(v[0]) + 10, [(-5, 10), (0, 15)]),
    "rosenbrock (2-d)": ("100 * (x1 - x0 ** 2) ** 2 + (1 - x0) ** 2",
                         lambda v: 100 * (v[1] - v[0] ** 2) ** 2 + (1 - v[0]) ** 2, [(-2, 2), (-1, 3)]),
}


def cos_series(x):
    """cos(x) in the language, which has no trigonometry: x reduced to [-pi, pi], then Taylor to x^20."""
    return ("r = x0 - 6.283185307179586 * round(x0 / 6.283185307179586)\n  cos_x0 = 0\n  term = 1\n"
            "  for k in 0..10 {\n    cos_x0 = cos_x0 + term\n    term = -term * r * r / ((2 * k + 1) * (2 * k + 2))\n  }\n")


def syslab_best(name, seeds, trials, tmp):
    expr, _, bounds = FUNCTIONS[name]
    suggests = "".join(f'  x{i} = suggest "x{i}" float ({lo}) {hi}\n' for i, (lo, hi) in enumerate(bounds))
    extra = cos_series("x0") if "cos_x0" in expr else ""
    lines = []
    for seed in seeds:
        lines.append(f"s = search trials={trials} sampler=tpe seed={seed} pruner=none {{\n{suggests}  {extra}objective {expr}\n}}\nprint s.best_value")
    script = pathlib.Path(tmp) / "quality.syslab"
    script.write_text("\n".join(lines) + "\n")
    r = subprocess.run([SYSLAB, "run", str(script)], check=True, capture_output=True, text=True)
    return [float(x) for x in r.stdout.split()]


def optuna_best(name, seed, trials):
    _, f, bounds = FUNCTIONS[name]
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(lambda t: f([t.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]), n_trials=trials)
    return study.best_value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trials", type=int, default=60)
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    print(f"optuna {optuna.__version__}; TPE defaults; best value after {args.trials} trials; mean ± standard error over {args.seeds} seeds")
    print("| function | syslab | Optuna | not worse beyond noise |")
    print("|---|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in FUNCTIONS:
            ours = syslab_best(name, seeds, args.trials, tmp)
            theirs = [optuna_best(name, s, args.trials) for s in seeds]
            m1, m2 = statistics.mean(ours), statistics.mean(theirs)
            e1 = statistics.stdev(ours) / math.sqrt(len(ours))
            e2 = statistics.stdev(theirs) / math.sqrt(len(theirs))
            ok = m1 <= m2 + 2 * math.sqrt(e1 * e1 + e2 * e2)
            print(f"| {name} | {m1:.4g} ± {e1:.2g} | {m2:.4g} ± {e2:.2g} | {'yes' if ok else 'NO'} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
