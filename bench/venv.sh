#!/bin/sh
# bench/venv.sh - the separate virtual environment of the PyTorch anchors.
#
#   bench/venv.sh                 creates $BENCH_VENV (default .bench-venv)
#   BENCH_VENV=.torch-venv bench/venv.sh   the same, in another folder
#
# PyTorch comes from PyPI. Its Linux wheel declares the nvidia-* CUDA
# packages (gigabytes) as dependencies; the CPU code needs none of them, so
# torch is installed without dependencies, then its small pure-Python ones,
# and a CPU check runs scaled_dot_product_attention forward and backward.
# If that check fails, torch is installed whole. Never part of `make test`.
set -eu
VENV=${BENCH_VENV:-.bench-venv}
PYTHON=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
check() {
  "$VENV/bin/python" - <<'PY'
import torch, torch.nn.functional as F
torch.manual_seed(0)
q, k, v = (torch.randn(1, 8, 128, 64, requires_grad=True) for _ in range(3))
o = F.scaled_dot_product_attention(q, k, v)
o.sum().backward()
ref = torch.softmax(q @ k.transpose(-1, -2) / 8, -1) @ v
assert torch.allclose(o, ref, atol=1e-5), "sdpa differs from the formula"
print("torch", torch.__version__, "CPU sdpa forward and backward work;", torch.get_num_threads(), "threads")
PY
}
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  "$VENV/bin/pip" install -q --no-deps "torch>=2,<3"
  "$VENV/bin/pip" install -q filelock typing-extensions sympy mpmath networkx jinja2 MarkupSafe fsspec numpy
fi
if ! check; then
  echo "torch without its CUDA dependencies does not run here; installing it whole" >&2
  "$VENV/bin/pip" install -q "torch>=2,<3" numpy
  check
fi
