"""Scale-out figures, in one run (docs/scaling.md records them):

    make build && python3 bench/scale_bench.py [--trials 32] [--cpu 0.5]

1. Throughput: a random search whose trials each burn --cpu seconds of CPU
   (an interpreter loop, calibrated first), run serially (`syslab run`), and
   under mpirun with 1 and 2 workers (-n 2, -n 3: rank 0 coordinates). The
   search's own wall time is read from its progress line; the process's
   wall time (mpirun's start included) is given beside it.
2. Coordinator cost end to end: 1,000 trials that do nothing, with a
   journal, on 2 workers: the search's wall time per trial is what rank 0
   spends per trial (sampling, messages, journal write), as no worker waits
   on anything else.
3. The coordinator's ask + tell + journal write alone, by build/bench_scale.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSLAB = os.path.join(ROOT, "build", "syslab")
MPI = [shutil.which("mpirun") or "mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader,tcp",
       "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]

SEARCH = """s = search trials=TRIALS sampler=random seed=1 JOURNAL {
  x = suggest "x" float 0 1
  acc = 0
  for i in 1..ITER { acc = acc + i }
  objective x
}
print s.best_value
"""


def script(tmp, trials, iters, journal=False):
    path = os.path.join(tmp, f"s-{trials}-{iters}-{int(journal)}.syslab")
    j = "journal=" + json.dumps(os.path.join(tmp, f"j-{time.time_ns()}.jsonl")) if journal else ""
    with open(path, "w") as f:
        f.write(SEARCH.replace("TRIALS", str(trials)).replace("ITER", str(iters)).replace("JOURNAL", j))
    return path


def run(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    m = re.findall(r"search \[[#.]+\] \d+/\d+ .*?([0-9.]+) s", r.stderr)
    search_wall = float(m[-1]) if m else float("nan")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, search_wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--cpu", type=float, default=0.5)
    ap.add_argument("--iters", type=int, default=0, help="loop iterations per trial (skips the calibration)")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)")
    tmp = tempfile.mkdtemp()
    # calibrate the loop to --cpu seconds of CPU per trial
    def per_trial(iters):  # CPU of 4 more trials, so that process start-up cancels out
        _, _, a = run([SYSLAB, "run", script(tmp, 4, iters)])
        _, _, b = run([SYSLAB, "run", script(tmp, 8, iters)])
        return (b - a) / 4

    iters = args.iters or 200000
    for _ in range(0 if args.iters else 2):
        iters = int(iters * args.cpu / per_trial(iters))
    print(f"calibration: {iters} loop iterations = {per_trial(iters):.3f} s CPU per trial")

    path = script(tmp, args.trials, iters)
    rows = []
    for label, cmd in [("serial (syslab run)", [SYSLAB, "run", path]),
                       ("mpirun -n 2 (1 worker)", MPI + ["-n", "2", SYSLAB, "run", path]),
                       ("mpirun -n 3 (2 workers)", MPI + ["-n", "3", SYSLAB, "run", path])]:
        wall, search_wall, cpu = run(cmd)
        rows.append((label, wall, search_wall, cpu))
    base = rows[0][2]
    print(f"\n{args.trials} trials of {args.cpu} s CPU (random sampler):\n")
    print("| run | search wall (s) | trials/s | vs serial | process wall (s) | CPU, every process (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, wall, sw, cpu in rows:
        print(f"| {label} | {sw:.2f} | {args.trials / sw:.3f} | {base / sw:.2f}x | {wall:.2f} | {cpu:.2f} |")

    n = 1000
    path = script(tmp, n, 1, journal=True)
    wall, sw, _ = run(MPI + ["-n", "3", SYSLAB, "run", path])
    print(f"\n{n} empty trials with a journal on 2 workers: search {sw:.2f} s, "
          f"{sw / n * 1e3:.3f} ms per trial (process {wall:.2f} s)")
    shutil.rmtree(tmp)
    bench = os.path.join(ROOT, "build", "bench_scale")
    if os.access(bench, os.X_OK):
        print("\ncoordinator alone (build/bench_scale, journal on the build disk):\n")
        print(subprocess.run([bench, os.path.join(ROOT, "build")], capture_output=True, text=True).stdout)


if __name__ == "__main__":
    main()
