"""PyTorch side of bench/lm_precision.sh: the CS336 basics language model
(token embedding; pre-norm blocks of RMSNorm, causal attention with rotary
embeddings, SwiGLU; a final norm and the output projection; no biases), the
same shapes as syslab's presets, timed as `lm_bench` times it: forward, and
forward+backward of the next-token cross-entropy, on random tokens, after
warm-up steps, float32 and under CPU autocast to bf16.

    .bench-venv/bin/python bench/torch_lm.py [preset] [context ...]

Prints one line per precision and context:
    RESULT torch <precision> <context> <forward s> <forward+backward s>
Needs torch in the bench venv (bench/venv.sh), never in the test venv. The
thread count is torch's default unless SYSLAB_THREADS is set, so both sides
use the same cores.
"""
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {  # vocab, d_model, d_ff, layers, heads (engine/graph/lm.c)
    "tiny": (10000, 64, 128, 2, 2),
    "small": (10000, 768, 3072, 12, 12),
    "medium": (10000, 1024, 4096, 24, 16),
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        # in float32, as the CS336 model upcasts; autocast leaves it so
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)


def rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, d, ff, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, D = x.shape
        h = self.ln1(x)
        split = lambda t: t.view(B, T, self.heads, D // self.heads).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        h = self.ln2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LM(nn.Module):
    def __init__(self, vocab, d, ff, layers, heads, context):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, ff, heads) for _ in range(layers))
        self.ln = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        dh = d // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, dh, 2).float() / dh))
        ang = torch.arange(context).float()[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x, self.cos[:T], self.sin[:T])
        return self.head(self.ln(x))


def timed(fn, warmups, steps):
    for _ in range(warmups):
        fn()
    t = []
    for _ in range(steps):
        s = time.perf_counter()
        fn()
        t.append(time.perf_counter() - s)
    return sum(t) / len(t)


def main():
    preset = sys.argv[1] if len(sys.argv) > 1 else "small"
    contexts = [int(c) for c in sys.argv[2:]] or [128]
    batch, warmups, steps = int(os.environ.get("BATCH", 4)), int(os.environ.get("WARMUPS", 1)), int(os.environ.get("STEPS", 3))
    if os.environ.get("SYSLAB_THREADS"):
        torch.set_num_threads(int(os.environ["SYSLAB_THREADS"]))
    vocab, d, ff, layers, heads = PRESETS[preset]
    torch.manual_seed(0)
    for T in contexts:
        m = LM(vocab, d, ff, layers, heads, T)
        ids = torch.randint(0, vocab, (batch, T + 1))
        x, y = ids[:, :-1], ids[:, 1:]
        for precision in ("fp32", "bf16"):
            def fwd():
                with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                    m(x)

            def fwd_bwd():
                m.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                    loss = F.cross_entropy(m(x).reshape(-1, vocab).float(), y.reshape(-1))
                loss.backward()

            f = timed(fwd, warmups, steps)
            fb = timed(fwd_bwd, warmups, steps)
            print(f"RESULT torch {precision} {T} {f:.4f} {fb:.4f}", flush=True)
        del m
    print("torch", torch.__version__, "threads", torch.get_num_threads(), "params",
          sum(p.numel() for p in LM(vocab, d, ff, layers, heads, 8).parameters()))


if __name__ == "__main__":
    main()
