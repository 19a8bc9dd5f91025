"""What Jupyter clients expect of a kernel beyond the message formats, checked
with jupyter_client against the real kernel: interrupts reach user
expressions, a user expression that is not one gets an error, is_complete
tells invalid from incomplete, a failed cell is answered before the cells
aborted behind it, and a huge print leaves in messages of at most 1 MiB."""
import json
import time

import zmq

from conftest import run


def alive(kc):
    kc.kernel_info()
    reply = kc.get_shell_msg(timeout=10)
    return reply["msg_type"] == "kernel_info_reply" and reply["content"]["status"] == "ok"


def test_interrupt_stops_a_user_expression(kernel):
    """jupyterlab-myst sends the inline expressions of every Markdown cell it
    renders: a slow one must stop at the stop button like a cell."""
    km, kc = kernel
    start = time.time()
    msg_id = kc.execute("a = 1", user_expressions={"slow": "sleep 20", "after": "a + 1"})
    time.sleep(0.5)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert time.time() - start < 5, "the interrupt did not stop the user expression"
    values = reply["content"]["user_expressions"]
    assert values["slow"]["status"] == "error" and values["slow"]["ename"] == "Interrupt"
    # the expressions after the interrupted one are not started
    assert values["after"]["status"] == "error" and values["after"]["ename"] == "Interrupt"
    assert "not evaluated" in values["after"]["evalue"]
    assert alive(kc)
    content, _ = run(kc, "a", user_expressions={"again": "a + 1"})
    assert content["user_expressions"]["again"]["data"]["text/plain"] == "2"


def test_user_expressions_that_are_not_expressions_get_errors(kernel):
    km, kc = kernel
    refused = {
        "assigns": ("b = 1", "SyntaxError", "this is an assignment"),
        "loops": ("for i in [1, 2] { c = i }", "SyntaxError", "this is a for loop"),
        "block": ("sweep x=[1, 2] { row y=x }", "SyntaxError", "runs a block of statements"),
        "two": ("1\n2", "SyntaxError", "this is 2 statements"),
        "prints": ('print "side effect"', "ValueError", "prints text"),
        "plots": ("plot (table x=[1, 2] y=[3, 4]) x=x y=y", "ValueError", "displays output"),
        "shows": ("show [1, 2]", "ValueError", "displays output"),
    }
    expressions = {name: code for name, (code, _, _) in refused.items()}
    expressions["fine"] = "(len [1, 2, 3]) * 2"
    content, outputs = run(kc, "a = 20", user_expressions=expressions)
    assert content["status"] == "ok"
    values = content["user_expressions"]
    for name, (code, ename, words) in refused.items():
        value = values[name]
        assert value["status"] == "error", f"{code!r} gave {value}"
        assert value["ename"] == ename and words in value["evalue"], value
        assert "a user expression must only compute a value" in value["evalue"]
        assert value["traceback"], value
    assert values["fine"]["status"] == "ok" and values["fine"]["data"]["text/plain"] == "6"
    # nothing was printed, displayed or assigned
    assert [m["msg_type"] for m in outputs if m["msg_type"] != "execute_input"] == []
    for name in ("b", "c", "i", "y"):
        content, _ = run(kc, name)
        assert content["status"] == "error" and content["ename"] == "NameError", name


def is_complete(kc, code):
    kc.is_complete(code)
    reply = kc.get_shell_msg(timeout=10)
    assert reply["msg_type"] == "is_complete_reply"
    return reply["content"]


def test_is_complete_tells_invalid_from_incomplete(kernel):
    """A newline ends a statement outside brackets and blocks, and a string
    cannot span lines: only open brackets, blocks and a line-ending backslash
    wait for another line (docs/language.md)."""
    km, kc = kernel
    for code in ["x = ", '"abc', 'print "abc', "1 +", "if true { } else", "for i in [1] {\n  y = "]:
        assert is_complete(kc, code)["status"] == "invalid", code
    for code in ["for i in [1, 2] {", "print (1 +", "x = [1,\n  2", 'print "a" \\']:
        reply = is_complete(kc, code)
        assert reply["status"] == "incomplete" and reply["indent"] == "  ", code
    for code in ["x = 1", 'print "abc"', "print 1 # a comment \\"]:
        assert is_complete(kc, code)["status"] == "complete", code


def test_a_failed_cell_is_answered_before_the_aborted_ones(kernel):
    """As ipykernel: the failed cell's execute_reply and idle, then for each
    cell queued behind it busy, the aborted reply and idle."""
    km, kc = kernel
    failed = kc.execute("sleep 0.5\nx = nope")
    behind = [kc.execute('print "must not run"'), kc.execute("marker = 1")]
    replies = [kc.get_shell_msg(timeout=15) for _ in range(3)]
    assert [r["parent_header"]["msg_id"] for r in replies] == [failed] + behind
    assert [r["content"]["status"] for r in replies] == ["error", "aborted", "aborted"]
    events = []
    while len([e for e in events if e == ("idle", behind[-1])]) == 0:
        msg = kc.get_iopub_msg(timeout=15)
        if msg["msg_type"] == "status":
            events.append((msg["content"]["execution_state"], msg["parent_header"].get("msg_id")))
    idle_failed = events.index(("idle", failed))
    for msg_id in behind:
        assert idle_failed < events.index(("busy", msg_id)) < events.index(("idle", msg_id))
    content, _ = run(kc, "marker")
    assert content["status"] == "error"  # the aborted cell never ran


def test_a_huge_print_leaves_in_messages_of_at_most_1_mib(kernel):
    """docs/reliability.md: one print of 8 MiB goes out as several stream
    messages of at most 1 MiB on the wire (jupyter_server drops a message
    past its IOPub data rate whole), split between UTF-8 characters."""
    km, kc = kernel
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://{km.ip}:{km.iopub_port}")
    deadline = time.time() + 10
    while True:  # the kernel greets each subscription: ours is live
        assert sub.poll(max(0, deadline - time.time()) * 1000), "no iopub_welcome"
        frames = sub.recv_multipart()
        if json.loads(frames[frames.index(b"<IDS|MSG>") + 2])["msg_type"] == "iopub_welcome":
            break
    unit = "ab\u20ac\n\t\""  # one- and three-byte characters, and ones JSON escapes
    msg_id = kc.execute(f's = "ab\\u{{20ac}}\\n\\t\\""\nfor i in 1..20 {{ s = s + s }}\nprint s')
    texts, sizes = [], []
    deadline = time.time() + 60
    while True:
        assert sub.poll(max(0, deadline - time.time()) * 1000), "no idle"
        frames = sub.recv_multipart()
        at = frames.index(b"<IDS|MSG>")
        header, parent, _, content = (json.loads(f) for f in frames[at + 2 : at + 6])
        if parent.get("msg_id") != msg_id:
            continue
        if header["msg_type"] == "stream":
            texts.append(content["text"])
            sizes.append(sum(len(f) for f in frames))
        if header["msg_type"] == "status" and content["execution_state"] == "idle":
            break
    sub.close()
    assert kc.get_shell_msg(timeout=10)["content"]["status"] == "ok"
    assert "".join(texts) == unit * 2**20 + "\n"  # whole characters in every message
    assert len(texts) >= 6, sizes
    assert max(sizes) <= 1 << 20, sizes
