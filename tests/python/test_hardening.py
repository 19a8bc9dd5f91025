"""Resource limits and storms against a real kernel through jupyter_client:
one cell's output is capped, interrupts land within 100 ms in every long
loop, a storm of interrupts leaves the kernel idle and its variables whole,
a short soak keeps memory flat, and `syslab run` refuses what is not a
script. The long versions of the soak and storms are bench/soak.py."""
import json
import os
import random
import signal
import statistics
import time

from conftest import run, stream_text, syslab


def kernel_pid(km):
    return km.provisioner.process.pid


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def interrupt_latency(km, kc, code, after=0.4):
    """Seconds from SIGINT to the cell's error reply."""
    msg_id = kc.execute(code)
    time.sleep(after)
    t0 = time.monotonic()
    km.signal_kernel(signal.SIGINT)
    reply = kc.get_shell_msg(timeout=30)
    latency = time.monotonic() - t0
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error", reply["content"]
    assert reply["content"]["ename"] == "Interrupt", reply["content"]
    return latency


SETUP = """
d = dataset synthetic train=200000 test=2000 features=64 classes=10
m = model mlp data=d hidden=[256, 256]
big = sweep i=1..150000 { }
"""

LONG_CELLS = {
    "sleep": "sleep 60",
    "loop": "x = 0\nfor i in 1..10000000 { x = x + i }",
    "training": "train m d epochs=50 batch=128",
    "evaluation": "for k in 1..1000 { evaluate m d split=train }",
    "sweep": "sweep a=1..1000 b=1..1000 { row c=a * b }",
    "sweep with sleep": "sweep a=1..100 { sleep 0.2 }",
    "plotting": "for k in 1..100 { plot big x=i y=i }",
    "saving": "for k in 1..100 { save big \"/tmp/syslab-interrupt-test.csv\" }",
}


def test_interrupts_land_within_100_ms(kernel):
    km, kc = kernel
    content, _ = run(kc, SETUP)
    assert content["status"] == "ok", content
    figures = {}
    for name, code in LONG_CELLS.items():
        figures[name] = [interrupt_latency(km, kc, code, after) for after in (0.3, 0.7)]
    print("\ninterrupt latency (ms): " + ", ".join(f"{k} {max(v) * 1000:.0f}" for k, v in figures.items()))
    # within 100 ms; on a loaded shared machine one of the two moments may
    # lose a scheduling slice, so the other must make it and neither may be far off
    for name, values in figures.items():
        assert min(values) < 0.1, f"{name}: interrupts took {[round(v * 1000) for v in values]} ms"
        assert max(values) < 0.25, f"{name}: an interrupt took {max(values) * 1000:.0f} ms"
    content, _ = run(kc, "m.params")
    assert content["status"] == "ok"
    if os.path.exists("/tmp/syslab-interrupt-test.csv"):
        os.unlink("/tmp/syslab-interrupt-test.csv")


def test_interrupt_storm_leaves_variables_whole(kernel):
    km, kc = kernel
    run(kc, "d = dataset synthetic train=20000 test=500 features=16\nm = model mlp data=d hidden=[64]\nv = 0")
    rng = random.Random(7)
    cells = ["v = (train m d epochs=20)", "v = sweep a=1..300 { sleep 0.001 }", "sleep 5\nv = 1", "v = [1, 2, 3]"]
    for i in range(20):
        msg_id = kc.execute(rng.choice(cells))
        time.sleep(rng.uniform(0.0, 0.3))
        km.signal_kernel(signal.SIGINT)
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id
        # the value is the old one or a whole new one
        content, outputs = run(kc, "type v")
        assert content["status"] == "ok", content
        kind = json.loads(outputs[-1]["content"]["data"]["text/plain"])
        assert kind in ("number", "table", "list"), kind
        if kind == "table":
            content, _ = run(kc, "v.nrows > 0")
            assert content["status"] == "ok"
    content, _ = run(kc, "m.params")
    assert content["status"] == "ok"


def test_cell_output_is_capped(kernel):
    km, kc = kernel
    # 50 MB of text from one cell: the first 10 MiB are shown, then a note
    code = 's = "0123456789"\nfor k in 1..6 { s = s + s + s + s }\nfor i in 1..1230 { print s }'
    start = time.monotonic()
    content, outputs = run(kc, code, timeout=120)
    assert content["status"] == "ok"
    out, err = stream_text(outputs, "stdout"), stream_text(outputs, "stderr")
    assert 10 * 2**20 - 50000 <= len(out) <= 10 * 2**20
    assert "[output truncated: " in err and "more bytes were not shown" in err
    dropped = int(err.split("[output truncated: ")[1].split()[0])
    assert dropped + len(out) == 1230 * 40961
    print(f"\n50 MB output: {time.monotonic() - start:.1f} s, {len(outputs)} messages")
    content, outputs = run(kc, 'print "next cell"')
    assert stream_text(outputs, "stdout") == "next cell\n"


def test_short_soak_keeps_memory_flat(kernel):
    km, kc = kernel
    pid = kernel_pid(km)
    cells = ['x = sweep a=1..20 { row b=a * a }', 'y = max(x.b)', 'print y', 'z = [1, 2, 3] + [4]',
             't = table p=[1, 2] q=["a", "b"]', 'len t']
    # without history: the input history is kept in memory by design (about
    # 80 bytes a cell), which would hide a leak of the same size
    for i in range(300):  # warm-up
        run(kc, cells[i % len(cells)], store_history=False)
    before = rss_kib(pid)
    for i in range(1000):
        run(kc, cells[i % len(cells)], store_history=False)
    after = rss_kib(pid)
    print(f"\nRSS after warm-up {before} KiB, after 1000 more executes {after} KiB")
    assert after <= before * 1.05, (before, after)


def test_plots_in_one_cell(kernel):
    km, kc = kernel
    content, outputs = run(kc, "t = table x=[1, 2, 3] y=[2, 4, 8]\nfor k in 1..20 { plot t x=x y=y title=\"plot\" + k }",
                           timeout=120)
    assert content["status"] == "ok", content
    assert sum(1 for m in outputs if m["msg_type"] == "display_data") == 20


def test_restarts(kernel):
    km, kc = kernel
    for _ in range(5):
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=30)
        content, _ = run(kc, "x = 1")
        assert content["status"] == "ok"


def test_run_refuses_what_is_not_a_script(tmp_path):
    r = syslab("run", str(tmp_path))
    assert r.returncode == 2 and "is a folder, not a script or notebook file" in r.stderr
    nul = tmp_path / "nul.sl"
    nul.write_bytes(b'print 1\nprint 2\0print 3\n')
    r = syslab("run", str(nul))
    assert r.returncode == 2 and "line 2, column 8 holds a NUL byte (U+0000)" in r.stderr
    py = tmp_path / "python.ipynb"
    py.write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": "print 'hello'", "metadata": {}, "outputs": [], "execution_count": None}],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))
    r = syslab("run", str(py))
    assert r.returncode == 1 and "is a notebook for python (kernel python3), not for syslab" in r.stderr
    assert "hello" not in r.stdout
