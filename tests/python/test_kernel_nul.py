"""A NUL byte in a cell's code, arriving through the wire as JSON "\\u0000",
gets the same clear error as a NUL in a file given to `syslab run`: the
whole cell is refused (nothing before the NUL runs, nothing is cut short),
the client gets its reply, and the kernel goes on. Driven by jupyter_client."""
from conftest import run, stream_text, syslab

NUL_ERROR = "holds a NUL byte (U+0000): code is text and cannot contain NUL characters"


def test_nul_in_code_is_refused_whole_and_the_kernel_goes_on(kernel):
    km, kc = kernel
    content, outputs = run(kc, "print 1\nprint 2\u0000print 3", timeout=20)
    assert content["status"] == "error" and content["ename"] == "SyntaxError"
    assert content["evalue"] == "line 2, column 8 " + NUL_ERROR
    assert content["traceback"][:3] == ["line 2, column 8:", "    print 2\u2400print 3", "           ^"]
    assert stream_text(outputs) == ""  # not even the line before it ran
    assert [m["msg_type"] for m in outputs] == ["execute_input", "error"]
    assert outputs[0]["content"]["code"] == "print 1\nprint 2\u0000print 3"  # echoed whole
    # inside a string literal: not a shorter string, an error
    content, _ = run(kc, 'x = "a\u0000b"\nprint x', timeout=20)
    assert content["status"] == "error" and content["evalue"] == "line 1, column 7 " + NUL_ERROR
    content, _ = run(kc, "x", timeout=20)
    assert content["status"] == "error" and content["ename"] == "NameError"  # x was never set
    # a silent request is answered too
    content, outputs = run(kc, "\u0000", silent=True, timeout=20)
    assert content["status"] == "error" and outputs == []
    # other requests carrying a NUL are answered, and the session is whole
    kc.is_complete("print 1\u0000")
    assert kc.get_shell_msg(timeout=10)["msg_type"] == "is_complete_reply"
    content, outputs = run(kc, "y = 6\nprint y * 7", timeout=20)
    assert content["status"] == "ok" and stream_text(outputs) == "42\n"


def test_nul_in_a_notebook_cell_run_from_the_command_line(tmp_path):
    nb = tmp_path / "nul.ipynb"
    nb.write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", '
                  '"metadata": {}, "outputs": [], "execution_count": null, "source": ["print 1\\n", "print 2\\u0000"]}]}')
    r = syslab("run", str(nb))
    assert r.returncode == 1 and r.stdout == ""
    assert f"{nb}, cell 1: line 2, column 8 " + NUL_ERROR in r.stderr
