"""syslab report: inline values in Markdown cells ({{ expression }}): the
prose follows the run and its parameters, formats agree with Python's
format(), measurements carry the timing mark, code is left alone, and a
value that fails is an error of the report naming notebook and cell."""
import json
import re

import nbformat

from conftest import ROOT, syslab

INLINE_NB = ROOT / "tests" / "report" / "inline_test.ipynb"


def report(*args):
    return syslab("report", *args, timeout=300)


def notebook(tmp_path, cells, name="nb.ipynb"):
    """A notebook of (kind, source) cells."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "syslab", "display_name": "syslab", "language": "syslab"}
    for kind, src in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def prose(md):
    return next(line for line in md.splitlines() if line.startswith("At "))


def test_prose_follows_the_parameters(tmp_path):
    runs = {}
    for width in ("8", "4"):
        out = tmp_path / width
        r = report(str(INLINE_NB), "-o", str(out), "--no-pdf", "-p", f"width={width}")
        assert r.returncode == 0, r.stderr
        assert "inline values: 7" in r.stderr
        runs[width] = (out / "report.md").read_text()
    assert prose(runs["8"]).startswith("At 8 bits the weights shrink by 75.0% (0.750 of float32); the format is "
                                       "mx\\_int\\*8, and 8,000 weights take 1,000 bytes.")
    assert prose(runs["4"]).startswith("At 4 bits the weights shrink by 87.5% (0.875 of float32); the format is "
                                       "mx\\_int\\*8, and 4,000 weights take 500 bytes.")
    # the measurement is marked, so two runs compare equal outside the marks
    assert re.search(r'One epoch took <span class="syslab-timing">\d+\.\d{4}</span> s\.$', prose(runs["8"]))


def test_code_comments_and_escapes_are_left_alone(tmp_path):
    out = tmp_path / "out"
    assert report(str(INLINE_NB), "-o", str(out), "--no-pdf").returncode == 0
    md = (out / "report.md").read_text()
    assert "Left alone: `{{ width }}` in a code span, ``{{ a ` b }}`` in a longer one, and \\{{ width }} after a " \
           "backslash." in md
    assert "```syslab\nprint {{ width }}\n```" in md
    assert "    {{ width }} in an indented block" in md
    # an HTML comment is neither evaluated nor kept: report.md's raw HTML passes the sanitiser, which drops comments
    assert "in a comment" not in md
    assert "{{" not in prose(md)


def test_executed_notebook_keeps_the_source_and_records_the_values(tmp_path):
    out = tmp_path / "out"
    before = INLINE_NB.read_bytes()
    assert report(str(INLINE_NB), "-o", str(out), "--no-pdf").returncode == 0
    assert INLINE_NB.read_bytes() == before  # JupyterLab still shows the braces as written
    executed = nbformat.read(out / "notebooks" / "inline_test.ipynb", as_version=4)
    nbformat.validate(executed)
    cell = next(c for c in executed.cells if c.id == "prose")
    assert "{{ saving :.1% }}" in cell.source
    entries = cell.metadata["user_expressions"]  # where jupyterlab-myst keeps them
    assert [e["expression"] for e in entries] == ["width", "saving", "saving", "name", "1000 * width",
                                                 "1000 * width / 8", "h.seconds[0]"]
    assert entries[1]["result"] == {"status": "ok", "data": {"text/plain": "0.75"}, "metadata": {}}
    # from the cache the prose is the same
    again = report(str(INLINE_NB), "-o", str(out), "--no-pdf")
    assert "taken from the cache" in again.stderr
    assert prose((out / "report.md").read_text()).startswith("At 8 bits")


CASES = [
    (0.8056, ""), (0.8056, ".3f"), (0.8056, ".1%"), (0.8056, "%"), (0.8056, ".2e"), (0.8056, "g"), (0.8056, ".2g"),
    (1234567.891, ",.2f"), (1234567.891, "_.1f"), (1234567.891, ",g"), (1234567.891, ".3e"), (1234567.891, ",.0%"),
    (60000, ",d"), (60000, "d"), (60000, "+,d"), (-60000, ",d"), (-0.0001, ".2f"), (-0.0001, "z.2f"),
    (2.5, ".0f"), (3.5, ".0f"), (0.125, ".2f"), (0.375, ".2f"), (1e-7, "g"), (1e-7, ".3f"), (123456789, "g"),
    (0.5, "+.2f"), (-0.5, "+.2f"), (1 / 3, ".9f"), (2 / 3, ".12g"), (0.12344999996, ".4f"), (1e21, ",.1f"), (0.0, "e"), (7, ".1f"),
]


def test_formats_agree_with_pythons_format(tmp_path):
    lines = [f"- case {i}: {{{{ {value!r} :{spec} }}}}" for i, (value, spec) in enumerate(CASES)]
    nb = notebook(tmp_path, [("code", "x = 1"), ("md", "\n".join(lines))])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    got = dict(re.findall(r"^- case (\d+): (.*)$", (out / "report.md").read_text(), re.M))
    for i, (value, spec) in enumerate(CASES):
        printed = float(f"{value:.9g}")  # the value as the language prints it: nine significant digits
        want = format(int(printed) if spec.endswith("d") else printed, spec) if spec else f"{value:.9g}"
        assert got[str(i)] == want.replace("_", "\\_"), (value, spec)


def test_a_failing_value_names_notebook_and_cell(tmp_path):
    nb = notebook(tmp_path, [("md", "# T"), ("code", "x = 1"), ("md", "x is {{ x }}, y is {{ y :.2f }}.")])
    good = notebook(tmp_path, [("code", "x = 2"), ("md", "x is {{ x }}.")], name="good.ipynb")
    out = tmp_path / "out"
    r = report(str(nb), str(good), "-o", str(out), "--no-pdf")
    assert r.returncode == 1
    assert "nb.ipynb, cell 3, inline value {{ y :.2f }}: NameError: name 'y' is not defined" in r.stderr
    md = (out / "report.md").read_text()
    assert "Incomplete report" in md and "inline value {{ y :.2f }}: NameError" in md and "x is 2." in md
    kept = report(str(nb), "-o", str(tmp_path / "kept"), "--no-pdf", "--allow-errors")
    assert kept.returncode == 0, kept.stderr
    assert "1 error (1 in cell, kept going: --allow-errors)" in kept.stderr
    assert "cell 3, inline value {{ y :.2f }}: NameError" in kept.stderr
    md = (tmp_path / "kept" / "report.md").read_text()
    assert "x is 1, y is **[inline value y failed: NameError: name 'y' is not defined" in md


def test_values_a_format_does_not_fit_fail(tmp_path):
    for src, why in [('{{ "text" :.2f }}', "the format ':.2f' is for numbers; the value is text"),
                     ("{{ t }}", "the value is an object shown as text/"),
                     ("{{ 2.5 :d }}", "the format 'd' needs a whole number; the value is 2.5")]:
        nb = notebook(tmp_path, [("code", "t = table a=[1, 2]"), ("md", f"value: {src}")])
        r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf", "--force")
        assert r.returncode == 1 and why in r.stderr, (src, r.stderr)


def test_unreadable_values_are_refused_before_anything_runs(tmp_path):
    for src, why in [("{{ x :.3q }}", "is not one syslab reads"), ("{{ x", "'{{' without its '}}'"),
                     ("{{ x !time }}", "after '!' comes the mark 'timing'"), ("{{ }}", "has no expression"),
                     ("{{ x :.2 }}", "a precision without a type"), ("{{ x :.f }}", "a '.' without a precision")]:
        nb = notebook(tmp_path, [("code", 'print "ran"'), ("md", f"value: {src}")])
        r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf", "--force")
        assert r.returncode == 1 and why in r.stderr and "nothing was run" in r.stderr, (src, r.stderr)
        assert "cell 2" in r.stderr
    nb = notebook(tmp_path, [("md", "# Title {{ 1 }}"), ("code", "x = 1")])
    r = report(str(nb), "-o", str(tmp_path / "out"), "--no-pdf", "--force")
    assert r.returncode == 1 and "title" in r.stderr


def test_strings_lists_and_booleans_print_as_the_language_prints_them(tmp_path):
    nb = notebook(tmp_path, [("code", 'xs = [1, 0.5, "a"]\ns = "a<b> & $c"'),
                             ("md", "list {{ xs }}, string {{ s }}, bool {{ len(xs) != 2 }}, nil {{ nil }}")])
    out = tmp_path / "out"
    assert report(str(nb), "-o", str(out), "--no-pdf").returncode == 0
    md = (out / "report.md").read_text()
    assert 'list \\[1, 0.5, "a"\\], string a&lt;b&gt; &amp; &#36;c, bool true, nil nil' in md
    html = (out / "report.html").read_text()
    assert "string a&lt;b&gt; &amp; $c" in html  # shown as written, never as markup
    assert json.loads((out / "notebooks" / "nb.ipynb").read_text())["cells"][1]["metadata"]["user_expressions"]
