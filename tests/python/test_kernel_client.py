"""The kernel driven by jupyter_client: interrupts, restart, stdin, abort on
error, rich and updated displays, and bad input that must not wedge it."""
import json
import os
import signal
import time

import zmq
from jupyter_client.session import Session

from conftest import run, stream_text


def alive(kc):
    kc.kernel_info()
    reply = kc.get_shell_msg(timeout=10)
    return reply["msg_type"] == "kernel_info_reply" and reply["content"]["status"] == "ok"


def test_interrupt_request_stops_sleep(kernel):
    km, kc = kernel
    start = time.time()
    msg_id = kc.execute("sleep 30")
    time.sleep(0.5)
    km.interrupt_kernel()  # interrupt_mode "message": an interrupt_request on control
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "Interrupt"
    assert time.time() - start < 5
    assert alive(kc)
    content, _ = run(kc, "x = 1\nx + 1")
    assert content["status"] == "ok"


def test_sigint_stops_sleep_and_is_ignored_when_idle(kernel):
    km, kc = kernel
    km.signal_kernel(signal.SIGINT)  # idle: must not kill the kernel
    time.sleep(0.3)
    assert km.is_alive() and alive(kc)
    msg_id = kc.execute("sleep 30")
    time.sleep(0.5)
    km.signal_kernel(signal.SIGINT)
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "Interrupt"
    assert alive(kc)


def test_restart_gives_a_fresh_session(kernel):
    km, kc = kernel
    run(kc, "kept = 42")
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=30)
    content, outputs = run(kc, "kept")
    assert content["status"] == "error" and content["ename"] == "NameError"


def test_stdin_round_trip(kernel):
    km, kc = kernel
    msg_id = kc.execute('name = input "Your name: "\nprint "hello " + name', allow_stdin=True)
    request = kc.get_stdin_msg(timeout=10)
    assert request["msg_type"] == "input_request"
    assert request["content"]["prompt"] == "Your name: "
    assert request["parent_header"]["msg_id"] == msg_id
    kc.input("Ada")
    reply = kc.get_shell_msg(timeout=10)
    assert reply["content"]["status"] == "ok"
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        outputs.append(msg)
    assert "hello Ada" in stream_text(outputs)


def test_input_without_stdin_fails_clearly(kernel):
    km, kc = kernel
    content, outputs = run(kc, 'x = input "?"', allow_stdin=False)
    assert content["status"] == "error"
    assert "input is not available" in content["evalue"]


def test_stop_on_error_aborts_queued_cells(kernel):
    km, kc = kernel
    first = kc.execute("sleep 0.5\nx = nope")
    second = kc.execute('print "must not run"')
    third = kc.execute("marker = 1")
    replies = {}
    for _ in range(3):
        reply = kc.get_shell_msg(timeout=15)
        replies[reply["parent_header"]["msg_id"]] = reply["content"]
    assert replies[first]["status"] == "error"
    assert replies[second]["status"] == "aborted"
    assert replies[third]["status"] == "aborted"
    content, _ = run(kc, "marker")
    assert content["status"] == "error"  # the aborted cell never ran
    # without stop_on_error the next cell runs
    kc.execute("y = nope", stop_on_error=False)
    fourth = kc.execute("ran = 1")
    got = {}
    for _ in range(2):
        reply = kc.get_shell_msg(timeout=15)
        got[reply["parent_header"]["msg_id"]] = reply["content"]
    assert got[fourth]["status"] == "ok"


def test_silent_execute_publishes_nothing(kernel):
    km, kc = kernel
    content, outputs = run(kc, 'print "quiet"\n5', silent=True)
    assert content["status"] == "ok"
    assert [m["msg_type"] for m in outputs] == []
    content, outputs = run(kc, "1")
    counts = [m["content"]["execution_count"] for m in outputs if m["msg_type"] == "execute_result"]
    assert counts == [1]  # the silent cell did not count


def test_user_expressions(kernel):
    km, kc = kernel
    content, _ = run(kc, "a = 20", user_expressions={"double": "a * 2", "bad": "nope"})
    assert content["user_expressions"]["double"]["status"] == "ok"
    assert content["user_expressions"]["double"]["data"]["text/plain"] == "40"
    assert content["user_expressions"]["bad"]["status"] == "error"
    assert content["user_expressions"]["bad"]["ename"] == "NameError"


def test_progress_updates_in_place(kernel):
    km, kc = kernel
    content, outputs = run(kc, "countdown 5 delay=0.05")
    assert content["status"] == "ok"
    first = [m for m in outputs if m["msg_type"] == "display_data"]
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    assert len(first) == 1 and updates
    display_id = first[0]["content"]["transient"]["display_id"]
    assert all(m["content"]["transient"]["display_id"] == display_id for m in updates)
    assert "5/5" in updates[-1]["content"]["data"]["text/plain"]
    assert "text/html" in updates[-1]["content"]["data"]


def test_error_names_line_and_column(kernel):
    km, kc = kernel
    content, outputs = run(kc, "x = 1\ny = x +\n")
    assert content["status"] == "error" and content["ename"] == "SyntaxError"
    content, outputs = run(kc, "width = 3\nprint wdith")
    assert content["ename"] == "NameError"
    assert "did you mean 'width'" in content["evalue"]
    assert content["traceback"][0].startswith("line 2, column 7")
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1


def test_comm_open_to_unknown_target_is_closed(kernel):
    km, kc = kernel
    msg = kc.session.msg("comm_open", {"comm_id": "c1", "target_name": "nothing.here", "data": {}})
    kc.shell_channel.send(msg)
    deadline = time.time() + 10
    while time.time() < deadline:
        m = kc.get_iopub_msg(timeout=10)
        if m["msg_type"] == "comm_close":
            assert m["content"]["comm_id"] == "c1"
            break
    else:
        raise AssertionError("no comm_close")
    kc.comm_info()
    reply = kc.get_shell_msg(timeout=10)
    assert reply["content"] == {"status": "ok", "comms": {}}


# ------------------------------------------------------------------ bad input


def raw_shell(km):
    """A DEALER socket on the kernel's shell port, to send what no client would."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://{km.ip}:{km.shell_port}")
    return sock


def test_wrong_signature_is_never_executed(kernel):
    km, kc = kernel
    forged = Session(key=b"not-the-key", username="mallory")
    sock = raw_shell(km)
    forged.send(sock, "execute_request",
                {"code": "pwned = 1", "silent": False, "store_history": True, "user_expressions": {},
                 "allow_stdin": False, "stop_on_error": True})
    unsigned = Session(key=b"", username="mallory")
    unsigned.send(sock, "execute_request",
                  {"code": "pwned = 2", "silent": False, "store_history": True, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True})
    time.sleep(0.5)
    assert sock.poll(200) == 0  # no reply to a forged message
    sock.close()
    assert alive(kc)
    content, _ = run(kc, "pwned")
    assert content["status"] == "error" and content["ename"] == "NameError"


def test_malformed_messages_do_not_wedge_the_kernel(kernel):
    km, kc = kernel
    sock = raw_shell(km)
    key = km.session.key
    sign = km.session.sign
    # truncated multipart: delimiter and signature only
    sock.send_multipart([b"<IDS|MSG>", b"abc"])
    # no delimiter at all
    sock.send_multipart([b"hello", b"world"])
    # invalid JSON, correctly signed
    parts = [b"{not json", b"{}", b"{}", b"{}"]
    sock.send_multipart([b"<IDS|MSG>", sign(parts), *parts])
    # a JSON array where an object belongs
    parts = [b"[1, 2]", b"{}", b"{}", b"{}"]
    sock.send_multipart([b"<IDS|MSG>", sign(parts), *parts])
    # unknown message type, correctly signed
    km.session.send(sock, "no_such_request", {})
    # a huge message: 20 MB of code in a comment
    huge = "#" + "x" * (20 * 1024 * 1024) + "\nhuge_ran = 1"
    km.session.send(sock, "execute_request",
                    {"code": huge, "silent": False, "store_history": False, "user_expressions": {},
                     "allow_stdin": False, "stop_on_error": True})
    reply = None
    deadline = time.time() + 30
    while time.time() < deadline and reply is None:
        if sock.poll(1000):
            frames = sock.recv_multipart()
            idents, msg = km.session.feed_identities(frames)
            msg = km.session.deserialize(msg)
            if msg["msg_type"] == "execute_reply":
                reply = msg
    assert reply is not None and reply["content"]["status"] == "ok"
    sock.close()
    assert alive(kc)
    content, _ = run(kc, "huge_ran")
    assert content["status"] == "ok"
    assert key  # the kernel under test signs messages


def test_heartbeat_answers_during_a_long_cell(kernel):
    km, kc = kernel
    kc.execute("sleep 2")
    time.sleep(0.3)
    ctx = zmq.Context.instance()
    hb = ctx.socket(zmq.REQ)
    hb.linger = 0
    hb.connect(f"tcp://{km.ip}:{km.hb_port}")
    hb.send(b"ping")
    assert hb.poll(1000), "heartbeat did not answer while a cell ran"
    assert hb.recv() == b"ping"
    hb.close()
    # control answers kernel_info while the shell is busy
    msg = kc.session.msg("kernel_info_request")
    kc.control_channel.send(msg)
    reply = kc.control_channel.get_msg(timeout=1)
    assert reply["msg_type"] == "kernel_info_reply"
    kc.get_shell_msg(timeout=10)


def test_a_cell_sent_after_the_failure_reply_runs(kernel):
    """Only requests queued before the failure are aborted: a client that sends
    the next cell as soon as it has the error reply (as nbclient does) runs it."""
    km, kc = kernel
    for _ in range(20):
        content, _ = run(kc, "x = nope")
        assert content["status"] == "error"
        content, _ = run(kc, "ok = 1")
        assert content["status"] == "ok"
