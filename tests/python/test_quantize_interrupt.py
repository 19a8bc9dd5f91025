"""Interrupting `quantize` of a long list through a real Jupyter client:
the command polls the interrupt while it reads the list and while it
builds the result (the quantisation between is about a nanosecond a
value), so a SIGINT in the middle of a 16-million value matrix answers
within 100 ms with an Interrupt error, the variables are whole, the
result is not assigned, and the next cell runs."""
from test_hardening import interrupt_latency, run

SETUP = """
xs = 1..2000000
ys = [xs, xs, xs, xs, xs, xs, xs, xs]
"""

CELLS = {
    "integer": "q = quantize ys format=integer width=8 frac=4",
    "block_fp": "q = quantize ys format=block_fp width=8 exponent_width=8 block=16",
}


def test_quantize_of_a_long_matrix_is_interruptible(kernel):
    km, kc = kernel
    content, _ = run(kc, SETUP)
    assert content["status"] == "ok", content
    for name, code in CELLS.items():
        # each must end in an Interrupt error (interrupt_latency asserts it), not finish first
        # the quantisation of 16 million values takes about 0.3 s on a quiet
        # machine, so both moments fall well inside it
        latencies = [interrupt_latency(km, kc, code, after) for after in (0.05, 0.12)]
        print(f"\n{name}: interrupt latency {[round(v * 1000) for v in latencies]} ms")
        # one of the two moments may lose a scheduling slice on a loaded machine
        assert min(latencies) < 0.1, (name, latencies)
        assert max(latencies) < 0.25, (name, latencies)
    content, outputs = run(kc, "print (len ys) (len ys[0])\nprint (quantize [1.3, -0.2] format=integer width=8 frac=2)")
    assert content["status"] == "ok", content
    text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    assert "8 2000000" in text and "[1.25, -0.25]" in text, text
    content, _ = run(kc, "q")
    assert content["status"] == "error" and content["ename"] == "NameError", content
