"""valgrind finds no leaks and no memory errors in the kernel's message loop."""
import os
import re
import shutil
import subprocess

import jupyter_client
import pytest
from jupyter_client.connect import write_connection_file

from conftest import SYSLAB_BIN


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (Debian package valgrind)")
def test_message_loop_has_no_leaks(tmp_path):
    conn, _ = write_connection_file(str(tmp_path / "conn.json"), ip="127.0.0.1", key=b"valgrind-test-key")
    log = tmp_path / "valgrind.log"
    proc = subprocess.Popen(
        ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99",
         f"--log-file={log}", SYSLAB_BIN, "kernel", "-f", conn],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = jupyter_client.BlockingKernelClient(connection_file=conn)
    kc.load_connection_file()
    kc.start_channels()
    try:
        # valgrind makes start-up slow: ask until the kernel answers on the
        # shell channel and its status messages reach us on iopub too (a
        # subscription not yet joined drops them, and the first cell's output
        # would then never arrive)
        for _ in range(120):
            kc.kernel_info()
            try:
                if kc.get_shell_msg(timeout=1)["msg_type"] != "kernel_info_reply":
                    continue
                kc.get_iopub_msg(timeout=1)
                break
            except Exception:
                assert proc.poll() is None, log.read_text()[-4000:]
        else:
            raise AssertionError("the kernel under valgrind never answered kernel_info on both channels")
        while True:   # what is left of the start-up's status messages
            try:
                kc.get_iopub_msg(timeout=0.5)
            except Exception:
                break
        for code in ['print "hello"', "x = [1, 2, 3]\nx", "y = nope", 'html "<i>x</i>"', "countdown 3 delay=0",
                     "for i in 1..3 { print i * 2 }", "help sleep", "(1 +"]:
            kc.execute_interactive(code, timeout=60)
        kc.complete("countdown 3 de")
        kc.get_shell_msg(timeout=60)
        kc.inspect("sleep")
        kc.get_shell_msg(timeout=60)
        kc.history(hist_access_type="tail", n=3)
        kc.get_shell_msg(timeout=60)
        kc.shutdown()
        rc = proc.wait(timeout=120)
    finally:
        kc.stop_channels()
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "LEAK SUMMARY" in text or "All heap blocks were freed" in text, text[-4000:]
    assert rc == 0, text[-4000:]
    summary = re.search(r"ERROR SUMMARY: (\d+) errors", text)
    assert summary and summary.group(1) == "0", text[-4000:]
    lost = re.search(r"definitely lost: ([\d,]+) bytes", text)
    assert lost is None or lost.group(1) == "0", text[-4000:]
