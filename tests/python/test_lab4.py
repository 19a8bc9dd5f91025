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
    # the roofs measured beside each kernel, a share never above 100%
    roofs = text("roofline-values")
    assert "roof_gflops" in roofs and "above_roof" in roofs
    # part D: the region selector on both sides of bit 6, every value exact; the integer dot product
    region = text("region")
    assert "bit6" in region and "0x3FC0" in region
    rows = [line.split() for line in cells["region"].outputs[-1].data["text/plain"].splitlines()[1:] if "0x" in line]
    assert {r[2] for r in rows} == {"0", "1"}  # mantissas with bit 6 set and clear
    assert len(rows) == 16 and all(float(r[-2]) == float(r[-1]) for r in rows)  # decoded == exact, both regions
    assert "516128" in text("mac")
    assert "No GPU here" in text("gpu-c") or "cpu_ms" in text("gpu-c")
