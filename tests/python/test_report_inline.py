"""syslab report: inline values in Markdown cells ({{ expression }} and
MyST's {eval}`expression`): the prose follows the run and its parameters,
formats agree with Python's format() on the exact value, measurements carry
the timing mark, code and math are left alone, a value stays within its
line, and a value that fails is an error of the report naming notebook and
cell."""
import json
import random
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


def filled(tmp_path, cells, *args):
    """report.md of a notebook of (kind, source) cells that must succeed."""
    out = tmp_path / "out"
    r = report(str(notebook(tmp_path, cells)), "-o", str(out), "--no-pdf", *args)
    assert r.returncode == 0, r.stderr
    return (out / "report.md").read_text()


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
    # the text the kernel shows, and the exact value the report formats
    assert entries[1]["result"] == {"status": "ok", "data": {"text/plain": "0.75", "text/vnd.syslab.number": "0.75"},
                                    "metadata": {}}
    # from the cache the prose is the same
    again = report(str(INLINE_NB), "-o", str(out), "--no-pdf")
    assert "taken from the cache" in again.stderr
    assert prose((out / "report.md").read_text()).startswith("At 8 bits")


SPECS = ["", ".3f", ".12f", ".0f", ".1%", "%", ".2e", "e", ".15e", "g", ".2g", ".12g", ".17g", ",.2f", "_.1f", ",g",
         "+.3e", "z.2f", "+,.0%", "-.4f", "z.0e"]
WHOLE_SPECS = ["d", ",d", "_d", "+,d", "-d"]
VALUES = [0.8056, 1 / 3, 2 / 3, 1234567.891, 60000, -60000, -0.0001, 2.5, 3.5, 0.125, 0.375, 1e-7, 123456789, 0.5,
          -0.5, 0.12344999996, 1e21, 0.0, 7, 2 ** 53, 2 ** 53 + 2, 2 ** 62, 1e300, 5e-324, 0.1, 1.7976931348623157e308,
          -1e-300, 299792458, 0.30000000000000004, 1e16, 999999.9999996]
VALUES += [random.Random(5).uniform(-1, 1) * 10 ** e for e in range(-12, 25, 3)]


def python_text(value, spec):
    """What Python's format() writes, or the language's print for no spec."""
    if not spec:
        return f"{value:.9g}" if value != int(value) or abs(value) >= 2 ** 53 else str(int(value))
    return format(int(value) if spec.endswith("d") else float(value), spec)


def test_formats_agree_with_pythons_format_on_the_exact_value(tmp_path):
    """Both forms, {{ x :spec }} and {eval}`format(x, "spec")`, write what
    Python's format() writes for the double itself, not for its nine
    printed digits."""
    cases = [(v, s) for v in VALUES for s in SPECS]
    cases += [(v, s) for v in VALUES if v == int(v) for s in WHOLE_SPECS]
    lines = [f'- case {i}: {{{{ {v!r} :{s} }}}} / {{eval}}`format({v!r}, "{s}")`' for i, (v, s) in enumerate(cases)]
    nb = notebook(tmp_path, [("code", "x = 1"), ("md", "\n".join(lines))])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    got = dict(re.findall(r"^- case (\d+): (.*)$", (out / "report.md").read_text(), re.M))
    assert len(got) == len(cases)
    for i, (value, spec) in enumerate(cases):
        want = python_text(value, spec).replace("_", "\\_")
        assert got[str(i)] == f"{want} / {want}", (value, spec)


def test_the_exact_value_not_the_printed_digits(tmp_path):
    md = filled(tmp_path, [("code", "third = 1 / 3"),
                           ("md", "A {{ third :.12f }} B {{ 2 ** 53 :,d }} C {{ 2 ** 62 :d }}"
                                  " D {eval}`format(2 ** 62, \",d\")` E {{ third }}")])
    assert ("A 0.333333333333 B 9,007,199,254,740,992 C 4611686018427387904 D 4,611,686,018,427,387,904 "
            "E 0.333333333") in md


def test_an_empty_measurement_leaves_no_span(tmp_path):
    md = filled(tmp_path, [("code", 'none = ""\nsome = " It took 2 s."'),
                           ("md", "Done.{eval .timing}`none` Next.{{ some !timing }}")])
    assert 'Done. Next.<span class="syslab-timing"> It took 2 s.</span>' in md, md


def test_eval_role_reads_as_braces_do(tmp_path):
    """MyST's {eval} is read like {{ }}: the same values, the timing mark as
    the class .timing, the executed notebook keeping the role's text where
    jupyterlab-myst looks for it, and the same errors naming the cell."""
    nb = notebook(tmp_path, [("code", 'width = 8\nname = "mx"\nh = 0.25'),
                             ("md", "At {eval}`width` bits ({{ width }}), {eval}`format(1 - width / 32, \".1%\")`"
                                    " saved, {eval}` name `, {eval .timing}`format(h, \".2f\")` s, "
                                    "{ eval }`` width * 2 ``; not `{eval}`width`` nor \\{eval}`width`.")])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert ('At 8 bits (8), 75.0% saved, mx, <span class="syslab-timing">0.25</span> s, 16; not `{eval}`width`` '
            "nor \\{eval}`width`.") in md, md
    executed = nbformat.read(out / "notebooks" / "nb.ipynb", as_version=4)
    assert [e["expression"] for e in executed.cells[1].metadata["user_expressions"]] == [
        "width", "width", 'format(1 - width / 32, ".1%")', " name ", 'format(h, ".2f")', " width * 2 "]
    bad = notebook(tmp_path, [("md", "# T"), ("code", "x = 1"),
                              ("md", "x is {eval}`x`, y is {eval}`format(y, \".2f\")`.")], name="bad.ipynb")
    r = report(str(bad), "-o", str(tmp_path / "bad"), "--no-pdf")
    assert r.returncode == 1
    assert "bad.ipynb, cell 3, inline value {eval}`format(y, \".2f\")`: NameError: name 'y' is not defined" in r.stderr
    for src, why in [("{eval}`x +\n1`", "must be on one line"), ("{eval}` `", "has no expression")]:
        nb = notebook(tmp_path, [("code", 'print "ran"'), ("md", f"value: {src}")], name="unread.ipynb")
        r = report(str(nb), "-o", str(tmp_path / "unread"), "--no-pdf", "--force")
        assert r.returncode == 1 and why in r.stderr, r.stderr
        assert "nothing was run" in r.stderr and "cell 2" in r.stderr, r.stderr


def test_format_refuses_what_it_cannot_write(tmp_path):
    for code, why in [('format("text", ".2f")', "is a string; the format '.2f' is for numbers"),
                      ("format(2.5, \"d\")", "the format 'd' needs a whole number; the value is 2.5"),
                      ('format(1, ".3q")', "is not one syslab reads"), ('format(1, ".f")', "without a precision")]:
        script = tmp_path / "f.syslab"
        script.write_text(f"print {code}\n")
        r = syslab("run", str(script))
        assert r.returncode != 0 and why in r.stderr, (code, r.stderr)
    script.write_text('print format(0.8056, ".1%") format("a b") format([1, 2]) format(-0.0001, "z.2f")\n')
    r = syslab("run", str(script))
    assert r.returncode == 0 and r.stdout == "80.6% a b [1, 2] 0.00\n", r.stderr


def test_math_is_left_alone(tmp_path):
    src = ("Inline $a_{{i}} + {eval}`x`$ and {{ x }} then $$\\sum_{{k}}\n{{ k }}$$ after {eval}`x`; "
           "a lone $ and {{ x }}.")
    md = filled(tmp_path, [("code", "x = 3"), ("md", src)])
    assert "Inline $a_{{i}} + {eval}`x`$ and 3 then $$\\sum_{{k}}\n{{ k }}$$ after 3; a lone $ and 3." in md, md


def test_a_value_stays_within_its_line(tmp_path):
    """A string with carriage returns and line feeds, or a value at the start
    of a line that would open a block there, is text within its line."""
    md = filled(tmp_path, [("code", 's = "a\\r# heading\\r- item\\n| x | y |"\nd = "- not a list"\nn = 3\nr = "==="'),
                           ("md", "Value: {{ s }} end.\n{{ d }}\n\n{eval}`n`. not ordered\n\nline\n{{ r }}\n\n"
                                  "- {{ d }}")])
    assert "Value: a \\# heading - item \\| x \\| y \\| end.\n&#45; not a list\n\n&#51;. not ordered\n\n" \
           "line\n&#61;==\n\n- &#45; not a list" in md, md
    assert "\r" not in md
    html = (tmp_path / "out" / "report.html").read_text()
    body = html[html.index("Value:"):]
    body = body[:body.index("</ul>") + 5]
    assert "<h1" not in body and "<h2" not in body and "<ol" not in body and "<table" not in body, body
    assert body.count("<li>") == 1 and "<hr" not in body, body
    assert "3. not ordered" in body and "- not a list" in body, body


def test_a_value_over_the_cap_is_an_error_naming_the_cell(tmp_path):
    nb = notebook(tmp_path, [("code", 'big = ""\nfor i in 1..500 {\n  big = big + "xxxxxxxxxx"\n}'), ("md", "# T"),
                             ("md", "Here: {{ big }}.")])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf", "--allow-errors")
    assert "nb.ipynb, cell 3, inline value {{ big }}: ValueError: the value's text is 5002 bytes; an inline value " \
           "holds at most 4096" in r.stderr, r.stderr
    executed = (out / "notebooks" / "nb.ipynb").read_text()
    assert "x" * 4097 not in executed and "x" * 4097 not in (out / "report.md").read_text()


def test_figure_captions_hold_values(tmp_path):
    md = filled(tmp_path, [("code", 'acc = 0.8056\nh = table epoch=[1, 2] a=[0.5, 0.8]'),
                           ("code", "#| label: fig-acc\n"
                                    '#| fig-cap: Accuracy {{ acc :.3f }}, or {eval}`format(acc, ".1%")`.\n'
                                    "plot h x=epoch y=a")])
    assert "*Figure 1: Accuracy 0.806, or 80.6%.*" in md, md
    bad = notebook(tmp_path, [("code", "#| fig-cap: {{ nope }}\nx = 1")], name="bad.ipynb")
    r = report(str(bad), "-o", str(tmp_path / "bad"), "--no-pdf")
    assert r.returncode == 1 and "bad.ipynb, cell 1, inline value {{ nope }}: NameError" in r.stderr, r.stderr


def test_the_kernel_sends_a_numbers_exact_value(kernel):
    from conftest import run
    _, kc = kernel
    reply, _ = run(kc, "x = 1 / 3", user_expressions={"n": "x", "big": "2 ** 62", "s": '"0.5"', "l": "[x]"})
    values = reply["user_expressions"]
    assert values["n"]["data"] == {"text/plain": "0.333333333", "text/vnd.syslab.number": "0.3333333333333333"}
    assert values["big"]["data"]["text/vnd.syslab.number"] == "4.611686018427388e+18"
    assert float(values["big"]["data"]["text/vnd.syslab.number"]) == 2 ** 62
    assert values["s"]["data"] == {"text/plain": '"0.5"'} and values["l"]["data"] == {"text/plain": "[0.333333333]"}


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
