"""The long soak and storms against one real kernel (tests/python/test_hardening.py
runs short versions in make test):

  10,000 executes in one kernel, RSS after warm-up flat within 5%
  200 interrupts at random moments into training, sweeps and sleeps: the
      kernel back to idle each time, variables old-or-new, never half-built
  50 restarts in a row
  a 50 MB output from one cell (capped, with the note)
  200 plots in one cell

Run: make kernelspec && .venv/bin/python bench/soak.py   (about 5 minutes)
Prints one line per figure, as recorded in docs/reliability.md.
"""
import json
import random
import signal
import sys
import time

from jupyter_client.manager import start_new_kernel

sys.path.insert(0, "tests/python")
from test_hardening import kernel_pid, rss_kib, run, text_of  # noqa: E402


def main():
    km, kc = start_new_kernel(kernel_name="syslab", startup_timeout=30)
    try:
        pid = kernel_pid(km)
        cells = ['x = sweep a=1..20 { row b=a * a }', 'y = max(x.b)', 'print y', 'z = [1, 2, 3] + [4]',
                 't = table p=[1, 2] q=["a", "b"]', 'len t', 'w = (x.b)[3] + 1', 'u = "s" + w']
        # first without history (store_history=False), which a leak cannot hide
        # behind, then as a notebook runs them: the input history is kept in
        # memory by design and grows by about 80 bytes a cell
        for keep in (False, True):
            for i in range(500):
                run(kc, cells[i % len(cells)], store_history=keep)
            before = rss_kib(pid)
            start = time.monotonic()
            samples = []
            for i in range(10000):
                content, _ = run(kc, cells[i % len(cells)], store_history=keep)
                assert content["status"] == "ok"
                if i % 1000 == 999:
                    samples.append(rss_kib(pid))
            after = rss_kib(pid)
            print(f"10,000 executes ({'with' if keep else 'without'} history): {time.monotonic() - start:.1f} s; "
                  f"RSS after warm-up {before} KiB, every 1000: {samples}, end {after} KiB "
                  f"({(after / before - 1) * 100:+.1f}%)")
            if not keep:
                assert after <= before * 1.05

        run(kc, "d = dataset synthetic train=20000 test=500 features=16\nm = model mlp data=d hidden=[64]\nv = 0")
        rng = random.Random(16)
        storm = ["v = (train m d epochs=20)", "v = sweep a=1..300 { sleep 0.001 }", "sleep 5\nv = 1", "v = [1, 2, 3]",
                 "v = sweep a=1..1000 b=1..100 { row c=a * b }"]
        latencies = []
        start = time.monotonic()
        for i in range(200):
            msg_id = kc.execute(rng.choice(storm))
            time.sleep(rng.uniform(0.0, 0.4))
            t0 = time.monotonic()
            km.signal_kernel(signal.SIGINT)
            reply = kc.get_shell_msg(timeout=60)
            latencies.append(time.monotonic() - t0)
            assert reply["parent_header"]["msg_id"] == msg_id
            content, outputs = run(kc, "type v")
            kind = json.loads(outputs[-1]["content"]["data"]["text/plain"])
            assert kind in ("number", "table", "list"), kind
        latencies.sort()
        print(f"200 interrupts: {time.monotonic() - start:.1f} s; reply after the signal: median "
              f"{latencies[100] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; kernel idle and v whole each time")

        start = time.monotonic()
        content, outputs = run(kc, 's = "0123456789"\nfor k in 1..6 { s = s + s + s + s }\n'
                                   'for i in 1..1230 { print s }', timeout=300)
        print(f"50 MB output: {time.monotonic() - start:.1f} s, {len(text_of(outputs, 'stdout'))} bytes shown, "
              f"{len(outputs)} messages")

        start = time.monotonic()
        content, outputs = run(kc, 't = table x=[1, 2, 3] y=[2, 4, 8]\nfor k in 1..200 { plot t x=x y=y title="p" + k }',
                               timeout=600)
        assert content["status"] == "ok"
        plots = sum(1 for m in outputs if m["msg_type"] == "display_data")
        print(f"200 plots in one cell: {time.monotonic() - start:.1f} s, {plots} displays, RSS {rss_kib(pid)} KiB")

        start = time.monotonic()
        for _ in range(50):
            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=30)
            content, _ = run(kc, "x = 1")
            assert content["status"] == "ok"
        print(f"50 restarts: {time.monotonic() - start:.1f} s, each answering its first execute")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
