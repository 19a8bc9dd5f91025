"""Kernel start-up and execute round trip: syslab beside ipykernel, measured
in one run with the same jupyter_client client.

    make build venv && .venv/bin/python -m ipykernel install --sys-prefix \
      && build/syslab install --prefix .venv \
      && .venv/bin/python bench/kernel_bench.py [--starts 10] [--executes 300]

Start-up is measured two ways. "launch": from spawning the kernel process
(the kernelspec's argv, with a connection file written beforehand and the
client's sockets already connecting) until its first kernel_info_reply
arrives: the kernel's own start-up. "manager": the same through
KernelManager.start_kernel, which adds jupyter_client's bookkeeping (port
choice, connection file, kernelspec lookup) that is the same for every
kernel. Round trip: from sending a trivial
execute_request (`x = 1`) until the kernel's `status: idle` for it.
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
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def launch_time(name):
    return launch_argv_time(KernelSpecManager().get_kernel_spec(name).argv)


def launch_argv_time(spec_argv):
    """launch time of a kernel started by spec_argv ({connection_file} replaced)"""
    with tempfile.TemporaryDirectory() as tmp:
        conn, _ = write_connection_file(os.path.join(tmp, "conn.json"), ip="127.0.0.1")
        argv = [a.replace("{connection_file}", conn) for a in spec_argv]
        if argv[0] in ("python", "python3"):  # as KernelManager does
            argv[0] = sys.executable
        # retry the connection every millisecond, not every 100 ms, so the
        # figure is the kernel's start-up and not ZeroMQ's reconnect timer
        ctx = zmq.Context()
        ctx.setsockopt(zmq.RECONNECT_IVL, 1)
        kc = BlockingKernelClient(connection_file=conn, context=ctx)
        kc.load_connection_file()
        kc.start_channels()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def start_time(name):
    km = KernelManager(kernel_name=name)
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.kernel_info()
    while True:
        msg = kc.get_shell_msg(timeout=60)
        if msg["msg_type"] == "kernel_info_reply":
            break
    elapsed = time.perf_counter() - t0
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return elapsed


def round_trips(name, n):
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    times = []
    for i in range(n + 10):
        t0 = time.perf_counter()
        msg_id = kc.execute("x = 1")
        while True:
            msg = kc.get_iopub_msg(timeout=30)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"):
                break
        kc.get_shell_msg(timeout=30)
        if i >= 10:  # the first few warm both sides up
            times.append(time.perf_counter() - t0)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return times


def p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--executes", type=int, default=300)
    args = ap.parse_args()
    results = {}
    for name in ("syslab", "python3"):
        launches = [launch_time(name) for _ in range(args.starts)]
        starts = [start_time(name) for _ in range(args.starts)]
        rt = round_trips(name, args.executes)
        results[name] = (statistics.median(launches), statistics.median(starts), statistics.median(rt), p99(rt))
    s, p = results["syslab"], results["python3"]
    print(f"{'kernel':<10} {'launch (median)':>16} {'manager (median)':>17} {'execute median':>15} {'execute p99':>12}")
    for name, (la, st, med, tail) in results.items():
        print(f"{name:<10} {la * 1000:>13.1f} ms {st * 1000:>14.1f} ms {med * 1000:>12.3f} ms {tail * 1000:>9.3f} ms")
    print("ratio syslab/ipykernel: " + ", ".join(
        f"{label} {a / b:.3f} (1/{b / a:.1f})" for label, a, b in
        zip(("launch", "manager", "execute median", "execute p99"), s, p)))


if __name__ == "__main__":
    main()
