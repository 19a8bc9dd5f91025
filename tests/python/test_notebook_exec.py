"""The example notebook executed end to end by real notebook tools through
the installed kernelspec: nbclient, and `jupyter nbconvert --execute`."""
import pathlib
import shutil
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "example.ipynb"


def test_nbclient_runs_the_example_notebook():
    before = NOTEBOOK.read_bytes()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=60, kernel_name="syslab").execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    by_id = {c.id: c for c in nb.cells}
    assert by_id["values"].outputs[0].output_type == "execute_result"
    assert by_id["values"].outputs[0].data["text/plain"] == "32"
    assert "saving at 8 bits: 75 %" in by_id["print"].outputs[0].text
    assert "text/markdown" in by_id["table"].outputs[0].data
    assert by_id["values"].execution_count == 1
    nbformat.validate(nb)
    assert NOTEBOOK.read_bytes() == before  # the source notebook is never written


def test_nbconvert_executes_to_markdown(tmp_path):
    copy = tmp_path / "example.ipynb"
    shutil.copy(NOTEBOOK, copy)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "markdown", "--execute",
                    "--ExecutePreprocessor.kernel_name=syslab", "--output-dir", str(tmp_path), str(copy)],
                   check=True, capture_output=True, timeout=120)
    md = (tmp_path / "example.md").read_text()
    assert "saving at 8 bits: 75 %" in md
    assert "| MXINT8 | 8.25 |" in md


def run_notebook(name):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="syslab").execute()
    errors = [(c.id, o.evalue) for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    nbformat.validate(nb)
    return {c.id: c for c in nb.cells}


def test_plots_notebook_runs_with_figures():
    cells = run_notebook("plots.ipynb")
    for cid in ("lines", "errors", "bars", "loglog"):
        kinds = [set(o.get("data", {})) for o in cells[cid].outputs]
        assert any({"image/png", "image/svg+xml", "text/plain"} <= k for k in kinds), cid
    assert "text/markdown" in cells["sweep"].outputs[-1].data


def test_lab0_notebook_runs_end_to_end():
    cells = run_notebook("lab0.ipynb")
    text = "".join(o.get("text", "") for o in cells["transform"].outputs)
    assert "identical: true" in text
    counts = cells["capture"].outputs[-1].data["text/plain"]
    assert "with labels             48" in counts and "with attention mask     49" in counts
    lora = "".join(o.get("text", "") for o in cells["lora"].outputs)
    assert "trainable: 2048 of 78154" in lora
    assert "unchanged: true" in "".join(o.get("text", "") for o in cells["lora-train"].outputs)


def test_lab1_notebook_reproduces_the_lab_shapes():
    cells = run_notebook("lab1.ipynb")
    text = "".join(o.get("text", "") for o in cells["widths-obs"].outputs)
    ptq4, qat4 = [float(v) for v in text.split("at 4 bits: PTQ ")[1].split(" - ")[0].split(" QAT ")]
    assert qat4 > ptq4  # QAT recovers what PTQ loses at low widths
    text = "".join(o.get("text", "") for o in cells["sparsity-obs"].outputs)
    random90, l1_90 = [float(v) for v in text.split("random ")[1].split("\n")[0].split(" L1 ")]
    assert l1_90 > random90  # L1 keeps more at high sparsity
    pruned = cells["sparsity"].outputs[-1].data["text/plain"]
    assert "the best QAT model:" in "".join(o.get("text", "") for o in cells["sparsity"].outputs)
    assert "weights+activations" in pruned and "l1, weights" in pruned  # the best QAT model, weights and activations
    sizes = cells["sizes"].outputs[-1].data["text/plain"]
    # whole bytes, with one shared scale per started block of 32 in each row:
    # a little above 8 + 8/32 bits, and the lab's 74.2 % saving
    row = next(line.split() for line in sizes.splitlines() if line.startswith("mxint8"))
    bits, saving, size = float(row[1]), float(row[2]), row[3]
    assert 8.25 < bits < 8.26 and round(saving * 100, 1) == 74.2 and "." not in size


def test_systems_notebook_runs_with_its_tables_and_figures():
    cells = run_notebook("systems.ipynb")
    accumulation = cells["accumulation"].outputs[-1].data["text/plain"]
    for printed in ("10.0001", "9.9531", "10.0021"):
        assert printed in accumulation
    for cid in ("profile-plot", "timeline"):
        kinds = [set(o.get("data", {})) for o in cells[cid].outputs]
        assert any({"image/png", "image/svg+xml"} <= k for k in kinds), cid
    check = cells["memory-check"].outputs[-1].data["text/plain"]
    ratios = [float(line.split()[-1]) for line in check.splitlines() if line.startswith(("forward", "train"))]
    assert len(ratios) == 2 and all(0.9 <= r <= 1.1 for r in ratios)  # predicted within 10% of measured
    oom = cells["oom-train"].outputs[-1].data["text/plain"]
    assert "OOM" in oom and "OK" in oom
    fused = "".join(o.get("text", "") for o in cells["fuse"].outputs)
    assert "attention blocks (FlashAttention-2)" in fused
    # the O(T^2) tensors kept for the backward: eager three, mask and softmax fused two, FlashAttention-2 none
    variants = cells["attention-variants"].outputs[-1].data["text/markdown"]
    assert "| syslab eager: scores, masked scores, softmax | 3 |" in variants
    assert "| syslab, mask and softmax fused (fuse attention=false) | 2 |" in variants
    assert "| syslab FlashAttention-2 (fuse) | 0 |" in variants
    grid = cells["bench"].outputs[-1].data["text/plain"]
    assert all(f" {w} " in grid for w in ("0", "1", "5")) and "small" in grid and "tiny" in grid
    assert "pass_ms" in cells["fuse-scale"].outputs[0].data["text/plain"]


HIGHLIGHT_CODE = """# the language's shapes, as nbconvert colours them
data = dataset synthetic train=200 test=50 features=8 classes=2 seed=1
done = false
for i in 1..3 step 2 { print "i = #" i }  # a '#' in a string is no comment
if not done and data != nil { note = 'ok' } else { note = "no" }
x = 2.5e-3 ** 2
train?
"""


def test_nbconvert_html_highlights_the_language(tmp_path):
    """nbconvert's HTML exporter, with the language_info the kernel gives,
    colours syslab sensibly: no error tokens (Python's lexer marked the `?`
    of `train?`, the help syntax, as an error) and the language's keywords,
    true/false/nil included, as keywords; and every code cell of the
    project's notebooks lexes without an error token."""
    from nbconvert import HTMLExporter
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Error

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(HIGHLIGHT_CODE)]
    NotebookClient(nb, timeout=60, kernel_name="syslab", allow_errors=True).execute()
    info = nb.metadata.language_info
    assert info.name == "syslab"
    html, _ = HTMLExporter().from_notebook_node(nb)
    code = html[html.index('<div class="highlight'):]
    code = code[:code.index("</pre>")]
    assert 'class="err"' not in code, code
    for word in ("for", "in", "if", "not", "and", "else"):
        assert f'<span class="k">{word}</span>' in code or f'<span class="ow">{word}</span>' in code, (word, code)
    for const in ("false", "nil"):
        assert f'<span class="kp">{const}</span>' in code or f'<span class="kc">{const}</span>' in code, (const, code)
    assert '<span class="c1"># a ' in code and '<span class="s2">"i = #"</span>' in code, code
    assert '<span class="mi">200</span>' in code and '<span class="o">**</span>' in code, code
    lexer = get_lexer_by_name(info.pygments_lexer)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                bad = [v for t, v in lexer.get_tokens(cell.source) if t in Error]
                assert not bad, (path.name, cell.source, bad)
