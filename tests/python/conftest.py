"""Shared fixtures for the tests that drive real Jupyter clients against syslab.

`make test` builds the binary, installs the kernelspec into the project's
virtual environment (where jupyter_client looks) and sets SYSLAB_BIN.
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYSLAB_BIN = os.environ.get("SYSLAB_BIN", str(ROOT / "build" / "syslab"))


def syslab(*args, **kwargs):
    """Runs the syslab program with arguments and returns the CompletedProcess."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 120)
    return subprocess.run([SYSLAB_BIN, *args], **kwargs)


@pytest.fixture(scope="session")
def syslab_bin():
    if not os.access(SYSLAB_BIN, os.X_OK):
        pytest.fail(f"syslab binary not found at {SYSLAB_BIN}: run `make test`")
    return SYSLAB_BIN


@pytest.fixture
def kernel():
    """A started syslab kernel and a blocking client; shut down afterwards."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="syslab", startup_timeout=30)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc, code, timeout=60, **kwargs):
    """Executes code through a client; returns (reply content, the IOPub
    messages of the request up to idle, status messages left out)."""
    msg_id = kc.execute(code, **kwargs)
    reply = kc.get_shell_msg(timeout=timeout)
    # on a loaded machine wait_for_ready may have asked kernel_info twice:
    # the second reply is still queued
    while reply["msg_type"] == "kernel_info_reply" and reply["parent_header"]["msg_id"] != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    assert reply["parent_header"]["msg_id"] == msg_id
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status":
            if msg["content"]["execution_state"] == "idle":
                break
            continue
        outputs.append(msg)
    return reply["content"], outputs


def stream_text(outputs, name="stdout"):
    """The text of one stream (stdout or stderr) among run's outputs."""
    return "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == name)
