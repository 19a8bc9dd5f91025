"""bench/gpu_first.sh, the first command on a GPU machine, run here without a GPU (the dry run).

The script is the one thing that must work the first time it meets a GPU,
so its plumbing is run here on the CPU: every GPU step says it skipped and
why, the summary and the tables are written, OUT holds at most the eight
files a GPU machine returns, the language-model rows (run on the CPU with
GPU_FIRST_DEVICE=cpu) keep a row for every preset whatever happens to it
(measured, a fault inside the run, a process that failed), and a spent
budget stops the steps with a summary still written. The binaries are
SYSLAB_BIN's build (GPU_FIRST_BUILD=0): the build itself is run by hand
(docs/gpu.md).
"""
import csv
import io
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from conftest import ROOT, SYSLAB_BIN

pytestmark = pytest.mark.skipif(shutil.which("nvidia-smi") is not None,
                                reason="a GPU is here: the dry run is the script's path without one")


def first(tmp_path, **env):
    out = tmp_path / "out"
    e = {k: v for k, v in os.environ.items() if k != "SYSLAB_FAULT_NODE"}
    e.update(GPU_BUILD=str(pathlib.Path(SYSLAB_BIN).parent), GPU_FIRST_BUILD="0", GPU_FIRST_DEVICE="cpu",
             GPU_FIRST_CONTEXT="16", LM_STEPS="1", **env)
    r = subprocess.run(["sh", str(ROOT / "bench" / "gpu_first.sh"), str(out)], env=e, capture_output=True, text=True,
                       timeout=300)
    return r, out


def tables(out):
    with tarfile.open(out / "tables.tar.gz") as t:
        return {pathlib.PurePath(m.name).name: t.extractfile(m).read().decode()
                for m in t.getmembers() if m.isfile()}


def test_dry_run_skips_every_gpu_step_and_says_why(syslab_bin, tmp_path):
    r, out = first(tmp_path, GPU_FIRST_PRESETS="tiny", GPU_FIRST_PRECISIONS="fp32 bf16")
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["bench.log", "build.log", "machine.txt", "sanitizer.log", "summary.md", "tables.tar.gz",
                     "tests.log"]   # at most the eight a GPU machine returns
    summary = (out / "summary.md").read_text()
    why = subprocess.run([SYSLAB_BIN, "run", "-"], input="print (version).gpu\n", capture_output=True,
                         text=True).stdout.strip()
    for line in ("test_gpu_graph: passed (its GPU side skipped: " + why, "test_gpu_ops: passed",
                 "test_kernels gpu: passed", "bench/gpu_models.sl: skipped (" + why, "kernels: skipped (" + why,
                 "compute-sanitizer: skipped (" + why):
        assert line in summary, line
    # the verdicts first, then the models' answer, then the figures
    assert summary.index("test_gpu_graph") < summary.index("## Models trained on both devices") < \
        summary.index("## Language models")
    t = tables(out)
    assert t["gpu.txt"].strip() == "no GPU"
    for prec in ("fp32", "bf16"):
        row = next(csv.DictReader(io.StringIO(t[f"lm_tiny_{prec}.csv"])))
        assert row["status_fwd"] == "OK" and row["status_train"] == "OK" and float(row["mean_s_train"]) > 0
        assert f"| tiny | 16 | {prec} | " in summary


def test_each_language_model_row_is_kept(syslab_bin, tmp_path):
    # small reaches layers_2 and faults there; "huge" is no preset (its process fails); tiny after both is measured
    r, out = first(tmp_path, GPU_FIRST_STEPS="lm", GPU_FIRST_PRESETS="small huge tiny", GPU_FIRST_PRECISIONS="fp32",
                   SYSLAB_FAULT_NODE="layers_2_ffn_w1")
    assert r.returncode == 1   # a row without a table is a failure of the run
    t = tables(out)
    small = next(csv.DictReader(io.StringIO(t["lm_small_fp32.csv"])))
    assert small["status_train"].startswith("fault: node layers_2_ffn_w1") and small["mean_s_train"] == ""
    huge = next(csv.DictReader(io.StringIO(t["lm_huge_fp32.csv"])))
    assert huge["status_train"] == "no row: exit 1"
    tiny = next(csv.DictReader(io.StringIO(t["lm_tiny_fp32.csv"])))
    assert tiny["status_train"] == "OK"
    summary = (out / "summary.md").read_text()
    assert "| small | 16 | fp32 | fault: node layers_2_ffn_w1" in summary
    assert "| huge | 16 | fp32 | no row: exit 1 |" in summary and "| tiny | 16 | fp32 | 0." in summary


def test_a_spent_budget_stops_the_steps_with_a_summary(syslab_bin, tmp_path):
    r, out = first(tmp_path, GPU_FIRST_SECONDS="1")
    summary = (out / "summary.md").read_text()
    for step in ("tests", "models", "lm", "kernels", "sanitizer"):
        assert f"== {step}: not run, the budget of 1 s is spent" in summary
    assert (out / "tables.tar.gz").exists()
