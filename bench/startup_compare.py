"""Start-up of two syslab binaries side by side, interleaved in one run:
`syslab --version` and the kernel's launch (spawn to first
kernel_info_reply, as bench/kernel_bench.py measures it). Used to check
that a change costs serial runs nothing (docs/scaling.md: the MPI module).

    .venv/bin/python bench/startup_compare.py OLD_BINARY NEW_BINARY [--runs 200] [--starts 30]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from kernel_bench import launch_argv_time


def version_time(binary):
    t0 = time.perf_counter()
    subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def launch_time(binary):
    return launch_argv_time([binary, "kernel", "-f", "{connection_file}"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--starts", type=int, default=30)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name, fn, n in [("--version", version_time, a.runs), ("kernel launch", launch_time, a.starts)]:
        times = {a.old: [], a.new: []}
        for _ in range(n):
            for b in (a.old, a.new):
                times[b].append(fn(b))
        o, w = statistics.median(times[a.old]), statistics.median(times[a.new])
        print(f"{name}: old median {o * 1e3:.2f} ms (min {min(times[a.old]) * 1e3:.2f}), "
              f"new median {w * 1e3:.2f} ms (min {min(times[a.new]) * 1e3:.2f}), new/old {w / o:.3f}")


if __name__ == "__main__":
    sys.exit(main())
