"""syslab report beside jupyter nbconvert --execute on the same notebooks,
both with the syslab kernel, in one run.

    make build venv && build/syslab install --prefix .venv
    .venv/bin/python bench/report_bench.py [--runs 3] [NOTEBOOK ...]

Both produce Markdown; syslab report is run with --no-cache (so it really
executes) and --no-pdf (nbconvert's Markdown export has no PDF step).
"""
import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed(cmd, cwd):
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("notebooks", nargs="*")
    args = ap.parse_args()
    notebooks = [pathlib.Path(n).resolve() for n in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    syslab = ROOT / "build" / "syslab"
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in notebooks:
            shutil.copy(n, tmp)
        copies = [str(pathlib.Path(tmp) / n.name) for n in notebooks]
        for _ in range(args.runs):
            ours.append(timed([str(syslab), "report", *copies, "-o", f"{tmp}/out", "--no-cache", "--no-pdf"], tmp))
            theirs.append(timed([sys.executable, "-m", "jupyter", "nbconvert", "--to", "markdown", "--execute",
                                 "--ExecutePreprocessor.kernel_name=syslab", "--output-dir", f"{tmp}/nbconvert",
                                 *copies], tmp))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"notebooks: {', '.join(n.name for n in notebooks)}")
    print(f"syslab report (Markdown)        median of {args.runs}: {a:.2f} s")
    print(f"jupyter nbconvert --execute     median of {args.runs}: {b:.2f} s")
    print(f"ratio nbconvert / syslab report: {b / a:.2f}x")


if __name__ == "__main__":
    main()
