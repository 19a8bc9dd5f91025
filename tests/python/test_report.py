"""syslab report: execution through the kernel, the Markdown and PDF report,
tags, parameters, the cache, reproducibility and every failure mode."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import nbformat
import pytest

from conftest import ROOT, SYSLAB_BIN, syslab

TEST_NB = ROOT / "tests" / "report" / "report_test.ipynb"
SECOND_NB = ROOT / "tests" / "report" / "second.ipynb"


def report(*args, **kwargs):
    return syslab("report", *args, timeout=300, **kwargs)


def strip_timing(md):
    return re.sub(r'<span class="syslab-timing">[^<]*</span>', "T", md)


@pytest.fixture
def built(tmp_path):
    out = tmp_path / "out"
    before = TEST_NB.read_bytes()
    r = report(str(TEST_NB), str(SECOND_NB), "-o", str(out), "-p", "n=5", "-p", "label=from the command line")
    assert r.returncode == 0, r.stderr
    assert TEST_NB.read_bytes() == before  # notebooks are only read
    return out, r


def test_markdown_report(built):
    out, r = built
    md = (out / "report.md").read_text()
    assert md.startswith("# Lab report\n\n## Contents\n\n1. [Report test](#report-test)\n2. [Second](#second)\n")
    assert "## Report test" in md and "### Tags" in md and "## Second" in md
    assert "| i | square |\n|---:|---:|\n| 1 | 1 |" in md
    assert "Figure 1 shows squares." in md  # @fig-squares resolved
    assert "![Figure 1: Squares of the first numbers.](figures/report_test-fig-squares.png)" in md
    png = (out / "figures" / "report_test-fig-squares.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "progress" not in md  # progress bars are left out
    assert "#|" not in md  # Quarto cell options are not shown
    # printed paths and progress lines
    assert r.stdout.splitlines()[0] == str(out / "report.md")
    assert "[12/12]" in r.stderr  # 11 code cells and the injected parameters
    assert "2 notebooks (0 from the cache)" in r.stderr


def test_tags(built):
    out, _ = built
    md = (out / "report.md").read_text()
    assert 'print "input hidden"' not in md and "input hidden\n" in md          # remove-input
    assert 'print "output hidden"' in md and "\noutput hidden\n" not in md      # remove-output
    assert "cell removed" not in md                                               # remove-cell
    assert "never executed\n```\n\n```text\nnever executed" not in md
    executed = nbformat.read(out / "notebooks" / "report_test.ipynb", as_version=4)
    cells = {c.id: c for c in executed.cells}
    assert cells["skipped"].outputs == [] and cells["skipped"].execution_count is None
    assert cells["raises"].outputs[0].output_type == "error"                      # raises-exception
    assert cells["after"].outputs[0].text == "after the error\n"                  # and the run went on
    assert cells["removed"].outputs[0].text == "cell removed\n"                   # removal happens after execution


def test_parameters_are_injected_and_recorded(built):
    out, _ = built
    md = (out / "report.md").read_text()
    assert "n is 5 and label is from the command line" in md
    executed = nbformat.read(out / "notebooks" / "report_test.ipynb", as_version=4)
    nbformat.validate(executed)
    ids = [c.id for c in executed.cells]
    assert ids.index("injected-parameters") == ids.index("params") + 1
    assert executed.metadata.syslab["parameters"] == {"n": "5", "label": '"from the command line"'}
    assert executed.metadata.kernelspec.name == "syslab"
    assert executed.metadata.language_info.name == "syslab"
    assert [c.execution_count for c in executed.cells if c.cell_type == "code" and c.execution_count][:3] == [1, 2, 3]


def test_pdf(built):
    out, _ = built
    pdf = out / "report.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout).group(1))
    assert 2 <= pages <= 8
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "Lab report" in text and "Report test" in text and "Tags" in text
    assert "Figure 1: Squares of the first numbers." in text
    assert "$x_1" not in text  # math was typeset, not printed as source


def test_cache_skips_unchanged_notebooks(tmp_path):
    nb = tmp_path / "cached.ipynb"
    shutil.copy(SECOND_NB, nb)
    out = tmp_path / "out"
    first = report(str(nb), "-o", str(out), "--no-pdf")
    assert first.returncode == 0 and "[1/1]" in first.stderr
    second = report(str(nb), "-o", str(out), "--no-pdf")
    assert "taken from the cache" in second.stderr and "[1/1]" not in second.stderr
    assert (out / "report.md").read_text().count("second notebook") == 2
    third = report(str(nb), "-o", str(out), "--no-pdf", "--no-cache")
    assert "[1/1]" in third.stderr
    data = json.loads(nb.read_text())
    data["cells"][1]["source"] = 'print "changed"'
    nb.write_text(json.dumps(data))
    fourth = report(str(nb), "-o", str(out), "--no-pdf")
    assert "[1/1]" in fourth.stderr and "changed" in (out / "report.md").read_text()
    fifth = report(str(nb), "-o", str(out), "--no-pdf", "-p", "x=1")  # other parameters: run again
    assert "(0 from the cache)" in fifth.stderr and "[2/2]" in fifth.stderr  # the injected parameters cell too


def test_two_runs_give_the_same_report(tmp_path):
    mds = []
    for run in range(2):
        out = tmp_path / f"run{run}"
        r = report(str(TEST_NB), "-o", str(out), "--no-pdf")
        assert r.returncode == 0, r.stderr
        mds.append((out / "report.md").read_text())
        figures = sorted(p.name for p in (out / "figures").iterdir())
        assert figures == ["report_test-fig-squares.png"]
    assert "syslab-timing" in mds[0]  # the training table's times are marked
    assert strip_timing(mds[0]) == strip_timing(mds[1])
    assert (tmp_path / "run0" / "figures" / "report_test-fig-squares.png").read_bytes() == \
        (tmp_path / "run1" / "figures" / "report_test-fig-squares.png").read_bytes()


def test_bad_notebooks_are_named_and_others_kept(tmp_path):
    bad_json = tmp_path / "broken.ipynb"
    bad_json.write_text('{"cells": [')
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps({"nbformat": 3, "worksheets": []}))
    python = tmp_path / "python.ipynb"
    python.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": [],
                                  "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}}))
    out = tmp_path / "out"
    r = report(str(bad_json), str(old), str(python), str(tmp_path / "missing.ipynb"), str(SECOND_NB), "-o", str(out),
               "--no-pdf")
    assert r.returncode == 1
    assert f"{bad_json}: not valid JSON at line 1" in r.stderr
    assert f"{old}: not an nbformat 4 notebook" in r.stderr
    assert "names the kernel 'python3'" in r.stderr
    assert "missing.ipynb: cannot read the file" in r.stderr
    assert "4 errors" in r.stderr
    assert "second notebook" in (out / "report.md").read_text()  # the good one is in the report


def test_failing_cell_stops_the_notebook_with_its_location(tmp_path):
    nb = tmp_path / "fails.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None, "source": "x = 1"},
        {"cell_type": "code", "id": "b", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "y = 2\nz = x + nope"},
        {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [], "execution_count": None, "source": 'print "late"'}]}))
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf")
    assert r.returncode == 1
    assert f"{nb}, cell 2, line 2, column 9: NameError: name 'nope' is not defined" in r.stderr
    executed = nbformat.read(out / "notebooks" / "fails.ipynb", as_version=4)
    assert executed.cells[2].outputs == []  # stopped there
    r = report(str(nb), "-o", str(out), "--no-pdf", "--allow-errors")
    assert r.returncode == 0 and "late" in (out / "report.md").read_text()


def test_cell_timeout(tmp_path):
    nb = tmp_path / "slow.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None, "source": "sleep 30"}]}))
    start = time.time()
    r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf", "--timeout", "1")
    assert r.returncode == 1 and time.time() - start < 15
    assert "still running after 1 seconds" in r.stderr


def test_cell_asks_for_more_time(tmp_path):
    """`#| timeout: S` lets one long cell (a search at the seeds' scale) run past --timeout"""
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    nb = tmp_path / "long.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        dict(cell, id="a", source="#| timeout: 20\nsleep 2\nprint \"long done\""),
        dict(cell, id="b", source="#| timeout: 20\nsleep 30")]}))
    start = time.time()
    r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf", "--timeout", "1")
    assert r.returncode == 1 and time.time() - start < 40
    assert "cell 2: still running after 20 seconds (its `#| timeout:` option)" in r.stderr
    executed = nbformat.read(tmp_path / "out" / "notebooks" / "long.ipynb", as_version=4)
    assert "long done" in executed.cells[0].outputs[0]["text"]


def test_kernel_death_is_reported(tmp_path):
    nb = tmp_path / "dies.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None, "source": "sleep 20"}]}))
    proc = subprocess.Popen([SYSLAB_BIN, "report", str(nb), "-o", str(tmp_path / "out"), "--no-pdf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    killed = False
    seen = {}  # kernel pid -> when first seen: killed once its cell runs, not while it starts
    while time.time() < deadline and not killed:
        time.sleep(0.3)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if len(cmd) > 3 and cmd[1] == b"kernel" and b"/syslab-report-" in cmd[3] and \
                    int(open(f"/proc/{pid}/stat").read().split()[3]) == proc.pid and \
                    time.time() - seen.setdefault(pid, time.time()) > 3:  # the cell sleeps 20 s
                os.kill(int(pid), signal.SIGKILL)
                killed = True
    out, err = proc.communicate(timeout=60)
    assert killed
    assert proc.returncode == 1
    assert "cell 1: the kernel died while running it" in err


def test_missing_tools_are_named(tmp_path):
    env = dict(os.environ, SYSLAB_CHROMIUM="/nonexistent/chromium")
    r = report(str(SECOND_NB), "-o", str(tmp_path / "out"), env=env)
    assert r.returncode == 1
    assert "install the Debian package chromium" in r.stderr
    assert (tmp_path / "out" / "report.md").exists()  # the Markdown report is still there
    env = dict(os.environ, PATH="/nonexistent")
    r = report(str(TEST_NB), "-o", str(tmp_path / "out2"), "--no-pdf", env=env)
    assert r.returncode == 1
    assert "gnuplot is not installed: install the Debian package gnuplot-nox" in r.stderr
    assert "cell 4" in r.stderr


def coloured_pixels(pdf):
    """pixels of the PDF's first page, drawn at 40 dpi, in the code's
    colours: red, orange, green or purple, not grey and not a link's blue"""
    ppm = subprocess.run(["pdftoppm", "-r", "40", "-f", "1", "-l", "1", str(pdf)], capture_output=True,
                         check=True).stdout
    fields = ppm.split(maxsplit=4)  # P6, width, height, maxval, pixels
    assert fields[0] == b"P6"
    pixels = fields[4]
    count = 0
    for i in range(0, len(pixels) - 2, 3):
        r, g, b = pixels[i], pixels[i + 1], pixels[i + 2]
        count += r - b > 40 or g - b > 40 or r - g > 60
    return count


def test_code_is_highlighted(tmp_path):
    """Code in report.html and the PDF is coloured by the language's own
    lexer: keywords, the registry's commands, strings, numbers, comments
    (before, it was one colour)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Colours"),
                nbformat.v4.new_code_cell('for i in 1..3 { print "i is" i }  # three lines\nok = not false')]
    path = tmp_path / "colours.ipynb"
    nbformat.write(nb, path)
    r = report(str(path), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "out" / "report.html").read_text()
    code = page[page.index('<pre><code class="language-syslab">'):]
    code = code[:code.index("</code></pre>")]
    for piece in ('<span class="syslab-kw">for</span>', '<span class="syslab-kw">in</span>',
                  '<span class="syslab-num">1</span>..<span class="syslab-num">3</span>',
                  '<span class="syslab-cmd">print</span>', '<span class="syslab-str">&quot;i is&quot;</span>',
                  '<span class="syslab-com"># three lines</span>', '<span class="syslab-kw">false</span>'):
        assert piece in code, (piece, code)
    assert ".syslab-kw{" in page and ".syslab-com{" in page  # the style sheet colours them
    text = subprocess.run(["pdftotext", str(tmp_path / "out" / "report.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert 'for i in 1..3 { print "i is" i }' in text and "# three lines" in text and "ok = not false" in text
    assert coloured_pixels(tmp_path / "out" / "report.pdf") > 10  # none before: the code was black


def test_pdf_failure_gives_the_reason(tmp_path):
    """When Chromium prints nothing the error says why: its exit status or
    signal and its last line on stderr; before, only "could not print"."""
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'starting up' >&2\necho '[123:FATAL:memory.cc] Out of memory.' >&2\nexit 3\n")
    fake.chmod(0o755)
    r = report(str(SECOND_NB), "-o", str(tmp_path / "out"), env=dict(os.environ, SYSLAB_CHROMIUM=str(fake)))
    assert r.returncode == 1
    assert ("could not print report.html to PDF: it exited with status 3; its last message: "
            "[123:FATAL:memory.cc] Out of memory.") in r.stderr, r.stderr
    fake.write_text("#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n")
    r = report(str(SECOND_NB), "-o", str(tmp_path / "out2"), env=dict(os.environ, SYSLAB_CHROMIUM=str(fake)))
    assert r.returncode == 1
    assert "it was killed by signal 11 (Segmentation fault); its last message: about to crash" in r.stderr, r.stderr
    assert (tmp_path / "out2" / "report.md").exists() and not (tmp_path / "out2" / "report.pdf").exists()


@pytest.mark.skipif(not os.access("/usr/bin/chromium", os.X_OK), reason="needs Chromium")
def test_pdf_under_a_memory_limit_names_the_limit(tmp_path):
    """Chromium reserves tens of GiB of address space and dies of a signal
    under any `ulimit -v`: the error names the signal and the limit."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    r = subprocess.run([SYSLAB_BIN, "report", str(SECOND_NB), "-o", str(tmp_path / "out")], capture_output=True,
                       text=True, timeout=300, preexec_fn=limit)
    if r.returncode == 0:
        pytest.skip("this Chromium printed under a 4 GiB address-space limit")
    assert "could not print report.html to PDF: it was killed by signal" in r.stderr, r.stderr
    assert "ulimit -v 4194304 KiB" in r.stderr and "--no-pdf" in r.stderr, r.stderr


def test_cached_notebook_saved_again_by_jupyter(tmp_path):
    """An executed notebook opened and saved in Jupyter stores its outputs'
    text as lists of lines; taken from the cache, it must give the same report
    (the exporter used to read a NULL string and crash)."""
    nb = tmp_path / "resaved.ipynb"
    shutil.copy(SECOND_NB, nb)
    out = tmp_path / "out"
    first = report(str(nb), "-o", str(out), "--no-pdf")
    assert first.returncode == 0, first.stderr
    md_before = strip_timing((out / "report.md").read_text())
    executed = out / "notebooks" / "resaved.ipynb"
    saved = nbformat.read(str(executed), as_version=4)
    nbformat.write(saved, str(executed))  # as Jupyter saves: multiline strings split into lists
    raw = json.loads(executed.read_text())
    assert any(isinstance(o.get("text"), list) or any(isinstance(v, list) for v in o.get("data", {}).values())
               for c in raw["cells"] for o in c.get("outputs", []))
    second = report(str(nb), "-o", str(out), "--no-pdf")
    assert second.returncode == 0, second.stderr
    assert "taken from the cache" in second.stderr
    assert strip_timing((out / "report.md").read_text()) == md_before
    # a cached notebook that no longer reads as one is run again, not trusted
    executed.write_text("{ not json")
    third = report(str(nb), "-o", str(out), "--no-pdf")
    assert third.returncode == 0, third.stderr
    assert "[1/1]" in third.stderr
    assert strip_timing((out / "report.md").read_text()) == md_before


def measured_figures(md):
    """The figures whose captions say they are drawn from timings."""
    return set(re.findall(r'\(figures/([^)]+\.png)\)\n\n\*[^\n]*<span class="syslab-timing-figure">', md))


def test_lab_reports_differ_only_in_measurements(tmp_path):
    # the notebooks that measure time: outside the marked values and the
    # figures marked as drawn from timings, two runs agree byte for byte
    nbs = [str(ROOT / "notebooks" / n) for n in ("systems.ipynb", "lab4.ipynb")]
    outs = []
    for run in range(2):
        out = tmp_path / f"run{run}"
        r = syslab("report", *nbs, "-o", str(out), "--no-pdf", "--no-cache", timeout=900)
        assert r.returncode == 0, r.stderr
        outs.append(out)
    mds = [(o / "report.md").read_text() for o in outs]
    assert strip_timing(mds[0]) == strip_timing(mds[1])
    measured = measured_figures(mds[0])
    assert {"systems-fig-profile.png", "lab4-fig-roofline.png", "lab4-fig-attention-times.png"} <= measured
    figures = sorted(p.name for p in (outs[0] / "figures").iterdir())
    assert figures == sorted(p.name for p in (outs[1] / "figures").iterdir())
    assert set(figures) - measured  # some figures are compared
    for name in set(figures) - measured:
        assert (outs[0] / "figures" / name).read_bytes() == (outs[1] / "figures" / name).read_bytes(), name


def small_notebook(path, *cells):
    """a notebook of code cells, each (source, tags)"""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    for i, (source, tags) in enumerate(cells):
        nb["cells"].append({"cell_type": "code", "id": f"c{i}", "metadata": {"tags": tags}, "outputs": [],
                            "execution_count": None, "source": source})
    path.write_text(json.dumps(nb))
    return path


def test_parameter_names_are_checked(tmp_path):
    """-p scael=full silently ran the default scale, and a name holding a
    newline went into the injected cell as code: a name the parameters cell
    does not set is warned about (as papermill does), with a suggestion, and
    a name that is no name is refused before anything runs."""
    nb = small_notebook(tmp_path / "p.ipynb", ('scale = "small"\nseed = 1', ["parameters"]),
                        ('print "scale is" scale', []))
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf", "-p", "scael=full")
    assert r.returncode == 0, r.stderr
    assert (f"{nb}: warning: -p scael: the parameters cell does not set 'scael' (it sets scale, seed); "
            "did you mean 'scale'?") in r.stderr
    r = report(str(nb), "-o", str(out), "--no-pdf", "-p", "scale=full")
    assert r.returncode == 0 and "warning" not in r.stderr
    assert "scale is full" in (out / "report.md").read_text()
    for bad in ["x\nprint 666\ny", "2x", "a-b", "if", "print", ""]:
        r = report(str(nb), "-o", str(tmp_path / "bad"), "--no-pdf", "-p", f"{bad}=1")
        assert r.returncode == 2, (bad, r.stderr)
        assert "-p takes NAME=VALUE" in r.stderr and "666" not in r.stdout
        assert not (tmp_path / "bad").exists()
    no_params = small_notebook(tmp_path / "q.ipynb", ('print "hello"', []))
    r = report(str(no_params), "-o", str(tmp_path / "out2"), "--no-pdf", "-p", "n=2")
    assert r.returncode == 0
    assert f"{no_params}: warning: -p n: the notebook has no cell tagged `parameters`" in r.stderr


@pytest.mark.parametrize("value", ["10s", "1e9", "abc", "", "-5", "2.5", "0", "86401"])
def test_bad_cell_timeouts_are_refused(tmp_path, value):
    """`#| timeout: 10s` (or 1e9, abc, nothing) was silently ignored: the cell
    ran under --timeout. Each is refused naming the cell, before any cell runs."""
    nb = small_notebook(tmp_path / "t.ipynb", ('print "first"', []), (f"#| timeout: {value}\nsleep 1", []))
    r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf")
    assert r.returncode == 1
    assert (f"{nb}, cell 2: `#| timeout: {value}` is not a whole number of seconds from 1 to 86400"
            in r.stderr), r.stderr
    assert "nothing was run" in r.stderr
