"""Labs 2 and 3 run through nbclient with the syslab kernel without error
outputs, and show their figures and the numbers their observations cite."""
import pathlib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_notebook(name):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="syslab").execute()
    errors = [(c.id, o.evalue) for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    nbformat.validate(nb)
    return {c.id: c for c in nb.cells}


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs)


def has_figure(cell):
    return any({"image/png", "image/svg+xml"} <= set(o.get("data", {})) for o in cell.outputs)


def test_lab2_notebook_runs_with_its_curves_and_front():
    cells = run_notebook("lab2.ipynb")
    for cid in ("fig-samplers", "fig-compression", "fig-front"):
        assert has_figure(cells[cid]), cid
    assert "best accuracy: random" in text_of(cells["grid"])
    assert "on the Pareto front" in text_of(cells["nsga"])
    study = cells["random"].outputs[-1].data["text/plain"]
    assert study.startswith("study: 12 trials (12 complete")


def test_lab3_notebook_runs_with_its_curves_per_family():
    cells = run_notebook("lab3.ipynb")
    assert has_figure(cells["fig-integer"]) and has_figure(cells["fig-families"])
    families = cells["families"].outputs[-1].data["text/plain"]
    for family in ("integer", "minifloat", "log", "block", "binary", "mx"):
        assert family in families
    assert "bits per parameter" in text_of(cells["best"])
