"""Labs 2 and 3 run through nbclient with the syslab kernel without error
outputs, and show their figures and the numbers their observations cite."""
from test_notebook_exec import run_notebook  # executes through nbclient, fails on any error output


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs)


def has_figure(cell):
    return any({"image/png", "image/svg+xml"} <= set(o.get("data", {})) for o in cell.outputs)


def test_lab2_notebook_runs_with_its_curves_and_front():
    cells = run_notebook("lab2.ipynb")
    for cid in ("fig-samplers", "fig-compression", "fig-front"):
        assert has_figure(cells[cid]), cid
    reached = cells["grid"].outputs[-1].data["text/plain"]   # the trial at which each sampler reached its best
    assert "first_trial" in reached and all(s in reached for s in ("random", "grid", "tpe"))
    front = cells["nsga"].outputs[-1].data["text/plain"]   # the Pareto front, sorted by bytes
    assert "accuracy" in front and "bytes" in front
    study = cells["random"].outputs[-1].data["text/plain"]
    assert study.startswith("study: 12 trials (12 complete")


def test_lab3_notebook_runs_with_its_curves_per_family():
    cells = run_notebook("lab3.ipynb")
    assert has_figure(cells["fig-integer"]) and has_figure(cells["fig-families"])
    families = cells["families"].outputs[-1].data["text/plain"]
    for family in ("integer", "minifloat", "log", "block", "binary", "mx"):
        assert family in families
    assert "bits per parameter" in text_of(cells["best"])
