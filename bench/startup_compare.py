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
import tempfile
import time

import zmq
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file


def version_time(binary):
    t0 = time.perf_counter()
    subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def launch_time(binary):
    with tempfile.TemporaryDirectory() as tmp:
        conn, _ = write_connection_file(os.path.join(tmp, "conn.json"), ip="127.0.0.1")
        ctx = zmq.Context()
        ctx.setsockopt(zmq.RECONNECT_IVL, 1)
        kc = BlockingKernelClient(connection_file=conn, context=ctx)
        kc.load_connection_file()
        kc.start_channels()
        t0 = time.perf_counter()
        proc = subprocess.Popen([binary, "kernel", "-f", conn], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kc.kernel_info()
        while kc.get_shell_msg(timeout=60)["msg_type"] != "kernel_info_reply":
            pass
        elapsed = time.perf_counter() - t0
        kc.shutdown()
        kc.stop_channels()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        ctx.term()
    return elapsed


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
