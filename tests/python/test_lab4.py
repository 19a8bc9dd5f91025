"""The Lab 4 notebook (kernels: naive against fused attention, MXINT8)
executed by nbclient through the installed kernelspec: no error output,
timing tables marked as measurements, the refusal over budget, the GPU
cells answering on a machine without a GPU, MXINT8 accuracy close to float32."""
import pathlib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_lab4_notebook_runs_and_shows_the_lab():
    nb = nbformat.read(ROOT / "notebooks" / "lab4.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="syslab").execute()
    errors = [(c.id, o.evalue) for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    nbformat.validate(nb)
    cells = {c.id: c for c in nb.cells}

    def text(cid):
        out = []
        for o in cells[cid].outputs:
            out.append(o.get("text", ""))
            out.append(o.get("data", {}).get("text/markdown", ""))
            out.append(o.get("data", {}).get("text/plain", ""))
        return "".join(out)

    assert "sgemm peak" in text("machine") and "syslab-timing" in text("machine")
    assert "fused 2 attention blocks (FlashAttention-2)" in text("parta-fuse")  # part A: eager against fused
    for cid in ("parta-mlp", "parta-vit", "parta-lm"):
        assert "first_call_ms" in text(cid) and "fused" in text(cid) and "syslab-timing" in text(cid)
    times = text("times")
    assert "attention_fused_train" in times and "syslab-timing" in times
    assert "speedup" in text("speedups")
    assert any("image/png" in o.get("data", {}) for o in cells["roofline"].outputs)
    assert "refused: needs 1.03 GiB, budget 0.50 GiB" in text("refusal")
    gpu = text("gpu-b")
    assert "No GPU here" in gpu or "attention_cuda_fused" in gpu
    assert "mxint8_dequant_bf16" in text("dequant")
    assert "mxint8_linear_unfused" in text("linear")
    acc = text("accuracy")
    assert "mxint8" in acc and "bits_per_param: 8.25" in acc
