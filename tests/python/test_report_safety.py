"""syslab report over notebooks nobody checked: their HTML and scripts cannot
read files into the report, the output folder is never a stranger's, figure
labels cannot collide, and no kernel or connection file outlives the run."""
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import SYSLAB_BIN, syslab


def report(*args, **kwargs):
    return syslab("report", *args, timeout=300, **kwargs)


def notebook(path, cells):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    for i, (kind, source) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": source}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        nb["cells"].append(cell)
    path.write_text(json.dumps(nb))
    return path


def pdf_text(pdf):
    return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def gone(pid, within):
    """True once the process has exited (a zombie counts) within `within` seconds."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def kernels_of(parent):
    """(pid, connection file) of the syslab kernels whose parent is `parent`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if len(cmd) > 3 and cmd[1] == b"kernel" and ppid == parent:
            found.append((int(pid), cmd[3].decode()))
    return found


def wait_for_kernel(parent, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        ks = kernels_of(parent)
        if ks:
            return ks[0]
        time.sleep(0.1)
    pytest.fail(f"no kernel started by {parent}")


# ------------------------------------------------------------ hostile HTML

class Elements(html.parser.HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer sees them."""

    def __init__(self):
        super().__init__()
        self.seen, self.policy = [], None

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, attrs))
        if tag == "meta" and ("http-equiv", "Content-Security-Policy") in attrs:
            self.policy = attrs

HOSTILE_MD = """# Hostile notebook

<script>document.write('SCRIPT' + '-RAN');</script>
<script>
var x = new XMLHttpRequest(); x.open('GET', 'file://{canary}', false); x.send(); document.write(x.responseText);
fetch("file:///etc/passwd").then(r => r.text()).then(t => document.body.append(t));
</script>
<iframe src="file://{canary}"></iframe>
<iframe src="file:///etc/passwd" width="800" height="400"></iframe>
<object data="file://{canary}" type="text/plain"></object>
<embed src="file:///etc/passwd" type="text/plain">
<link rel="stylesheet" href="file://{canary}">
<meta http-equiv="refresh" content="0; url=file://{canary}">
<base href="file:///etc/">
<img src="missing.png" onerror="document.body.append('ONERROR' + '-RAN')">
<img src="jav&#x61;script:alert(1)"> <img src="file:///usr/share/pixmaps/debian-logo.png">
<svg><script>document.write('SVG' + '-RAN')</script></svg>
<a href="javascript:document.write('LINK' + '-RAN')">a link</a>
<style>@import url("file://{canary}");</style>

Math still works: $\\alpha^2 + \\beta$ and $$\\frac{{\\gamma}}{{2}}$$
"""


HOSTILE_SVG = ("<?xml version='1.0'?><!DOCTYPE svg [<!ENTITY xxe SYSTEM 'file://{canary}'>]>"
               "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='40' "
               "height='40' onload='alert(1)'><script>alert('SVGFIG')</script>"
               "<style>circle {{ fill: url(file://{canary}) }}</style>"
               "<foreignObject width='9' height='9'><iframe src='file:///etc/passwd'/></foreignObject>"
               "<image xlink:href='file://{canary}' width='10' height='10'/>"
               "<defs><linearGradient id='g'><stop offset='0' stop-color='red'/></linearGradient></defs>"
               "<a xlink:href='javascript:alert(2)'><circle cx='10' cy='10' r='8' fill='url(#g)' "
               "onclick='alert(3)'/></a><use href='file:///tmp/x.svg#a'/><use xlink:href='#g'/>"
               "<text x='1' y='30' style='fill: url(data:x)'>&xxe; T&amp;C</text>"
               "<set attributeName='href' to='javascript:alert(4)'/><animate attributeName='x' values='1;2'/>"
               "<rect width='5' height='5' fill='url(http://evil/x.svg#p)'/></svg>")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    secret = f"CANARY-{uuid.uuid4().hex}"
    canary = tmp / "canary.txt"
    canary.write_text(secret + "\n")
    html_out = ("<p>from a cell</p><script>document.write('CELL' + '-RAN')</script>"
                f"<iframe src='file://{canary}'></iframe><img src=x onerror='document.write(1)'>")
    nb = notebook(tmp / "hostile.ipynb", [
        ("markdown", HOSTILE_MD.format(canary=canary)),
        ("code", f'html "{html_out}"'),
        ("code", f'svg "{HOSTILE_SVG.format(canary=canary)}"'),
    ])
    out = tmp / "out"
    r = report(str(nb), "-o", str(out))
    assert r.returncode == 0, r.stderr
    passwd_first = open("/etc/passwd").readline().strip()
    return out, secret, passwd_first


def test_no_file_content_reaches_the_report(hostile):
    out, secret, passwd_first = hostile
    page = (out / "report.html").read_text()
    text = pdf_text(out / "report.pdf")
    for leaked in (secret, passwd_first, "root:x:0:0"):
        assert leaked not in page
        assert leaked not in text
    assert "from a cell" in text and "Hostile notebook" in text  # the harmless parts are kept


def test_notebook_scripts_never_run(hostile):
    out, _, _ = hostile
    text = pdf_text(out / "report.pdf")
    for marker in ("SCRIPT-RAN", "ONERROR-RAN", "SVG-RAN", "CELL-RAN", "LINK-RAN"):
        assert marker not in text
    page = (out / "report.html").read_text()
    elements = Elements()
    elements.feed(page)
    tags = {tag for tag, _ in elements.seen}
    for banned in ("iframe", "object", "embed", "base", "svg", "frame", "form"):
        assert banned not in tags, banned
    # images keep only sources inside the report's folder
    assert {dict(a).get("src") for t, a in elements.seen if t == "img"} == {None, "x", "missing.png",
                                                                            "figures/hostile-cell3.svg"}
    for tag, attrs in elements.seen:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            assert not (value or "").lower().startswith(("javascript:", "file:")) or \
                (tag == "link" and value == "file:///usr/share/javascript/katex/katex.min.css"), (tag, name, value)
    assert [a for t, a in elements.seen if t == "meta"] == [[("charset", "utf-8")], elements.policy]
    assert sum(t == "link" for t, _ in elements.seen) == 1 and sum(t == "style" for t, _ in elements.seen) == 1
    assert page.lower().count("<script") == 2  # KaTeX and the typesetting script, nothing from the notebook
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "file:///usr/share/pixmaps" not in page  # images only from the report's folder


def test_report_md_holds_no_active_html(hostile):
    """report.md's raw HTML follows the sanitiser's rules, as report.html
    does: no <script>, <style>, <iframe>, <meta http-equiv=refresh> or on*
    attribute left for a Markdown viewer (before, they were kept verbatim)."""
    out, secret, _ = hostile
    md = (out / "report.md").read_text()
    prose = re.sub(r"```.*?```", "", md, flags=re.S)  # code is shown as code
    for banned in (r"<script", r"<style", r"<iframe", r"<meta", r"<object", r"<embed", r"<link", r"<base",
                   r"<svg", r"\son\w+\s*=", r"javascript:", r"file:"):
        assert not re.search(banned, prose, re.I), (banned, prose)
    assert "from a cell" in prose and "a link" in prose and "# Hostile notebook" in prose
    assert "$\\alpha^2 + \\beta$" in prose  # math untouched
    assert '<img src="missing.png">' in prose


def test_svg_figures_are_inert(hostile):
    """An SVG figure keeps its drawing and loses scripts, styles,
    foreignObject, images, animations, DOCTYPE entities and every reference
    outside the figure (before, it was written verbatim)."""
    import xml.etree.ElementTree as ET

    out, secret, passwd_first = hostile
    svg = (out / "figures" / "hostile-cell3.svg").read_text()
    for banned in ("script", "style", "foreignObject", "iframe", "image", "DOCTYPE", "ENTITY", "onload", "onclick",
                   "javascript", "file:", "http://evil", "data:", "<set", "<animate", "<a ", "SVGFIG", secret,
                   passwd_first):
        assert banned not in svg, (banned, svg)
    root = ET.fromstring(svg.encode())  # well formed
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    circle = root.find(".//{http://www.w3.org/2000/svg}circle")
    assert circle is not None and circle.get("fill") == "url(#g)" and circle.get("r") == "8"
    uses = root.findall(".//{http://www.w3.org/2000/svg}use")
    hrefs = [u.get("{http://www.w3.org/1999/xlink}href") or u.get("href") for u in uses]
    assert hrefs == [None, "#g"]  # the reference to another file is gone
    text = root.find(".//{http://www.w3.org/2000/svg}text")
    assert text.text == "&xxe; T&C" and text.get("style") is None


def test_math_is_still_typeset(hostile):
    out, _, _ = hostile
    text = pdf_text(out / "report.pdf")
    assert "α" in text and "β" in text and "γ" in text  # KaTeX turned \alpha into a symbol
    assert "\\alpha" not in text and "$" not in text


def test_chromium_reads_no_files_with_scripts(tmp_path):
    """The page itself refuses file reads even if a script got in: the policy
    in report.html, and Chromium without --allow-file-access-from-files."""
    out = tmp_path / "out"
    r = report(str(notebook(tmp_path / "plain.ipynb", [("markdown", "# Plain\n\ntext")])), "-o", str(out))
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    policy = page.split('Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    assert "connect-src" not in policy and "frame-src" not in policy  # both fall back to default-src 'none'


# ------------------------------------------------------------ headings

class Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and (attrs.get("href") or "").startswith("#"):
            self.links.append(attrs["href"][1:])


def test_contents_links_resolve(tmp_path):
    a = notebook(tmp_path / "a.ipynb", [("markdown", "# Results: the *fast* path, $x_1$\n\nSee [below](#notes).\n\n## Notes")])
    b = notebook(tmp_path / "b.ipynb", [("markdown", "# Results: the *fast* path, $x_1$"), ("code", "1 + 1")])
    c = notebook(tmp_path / "c.ipynb", [("markdown", "No heading here"), ("markdown", "# A later heading")])
    d = notebook(tmp_path / "d.ipynb", [("markdown", "# Contents")])
    out = tmp_path / "out"
    r = report(str(a), str(b), str(c), str(d), "-o", str(out))
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "1. [Results: the *fast* path, $x_1$](#results-the-fast-path-x_1)\n" in md
    assert "2. [Results: the *fast* path, $x_1$](#results-the-fast-path-x_1-1)\n" in md
    assert "3. [c](#c)\n" in md and "4. [Contents](#contents-1)\n" in md
    page = Anchors()
    page.feed((out / "report.html").read_text())
    assert len(page.links) >= 5
    for link in page.links:
        assert link in page.ids, f"#{link} points nowhere"


# ------------------------------------------------------------ output folder

def test_empty_output_name_is_refused(tmp_path):
    nb = notebook(tmp_path / "nb.ipynb", [("code", 'print "hi"')])
    work = tmp_path / "cwd"
    work.mkdir()
    r = report(str(nb), "-o", "", cwd=work)
    assert r.returncode == 2
    assert "-o needs the name of a folder" in r.stderr
    assert list(work.iterdir()) == []
    assert not os.path.exists("/report.md") and not os.path.exists("/.cache")


def test_root_is_refused_even_with_force(tmp_path):
    nb = notebook(tmp_path / "nb.ipynb", [("code", 'print "hi"')])
    before = sorted(os.listdir("/"))
    for extra in ([], ["--force"]):
        r = report(str(nb), "-o", "/", *extra)
        assert r.returncode == 2
        assert "refusing to write the report into /" in r.stderr
    assert sorted(os.listdir("/")) == before


def test_foreign_folder_is_refused_unless_forced(tmp_path):
    nb = notebook(tmp_path / "nb.ipynb", [("code", 'print "hi"')])
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text("my thesis")
    (folder / "data").mkdir()
    r = report(str(nb), "-o", str(folder), "--no-pdf")
    assert r.returncode == 2
    assert "does not look like an earlier report" in r.stderr
    assert "'thesis.tex'" in r.stderr and "'data'" in r.stderr and "--force" in r.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["data", "thesis.tex"]
    r = report(str(nb), "-o", str(folder), "--no-pdf", "--force")
    assert r.returncode == 0, r.stderr
    assert (folder / "report.md").exists() and (folder / "thesis.tex").read_text() == "my thesis"
    # an earlier report is not foreign
    again = report(str(nb), "-o", str(tmp_path / "rep"), "--no-pdf")
    assert again.returncode == 0
    assert report(str(nb), "-o", str(tmp_path / "rep"), "--no-pdf").returncode == 0


def test_failed_run_leaves_no_old_report(tmp_path):
    good = notebook(tmp_path / "good.ipynb", [("markdown", "# Good"), ("code", 'print "first run"')])
    out = tmp_path / "out"
    assert report(str(good), "-o", str(out)).returncode == 0
    assert (out / "report.pdf").exists()
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{")
    r = report(str(broken), "-o", str(out))
    assert r.returncode == 1
    assert not (out / "report.md").exists() and not (out / "report.html").exists() and not (out / "report.pdf").exists()
    assert r.stdout == ""  # no path printed for files that were not written
    # a run where one notebook fails says so at the top of the report
    r = report(str(good), str(broken), "-o", str(out), "--no-pdf")
    assert r.returncode == 1
    md = (out / "report.md").read_text()
    assert "**Incomplete report:**" in md and "broken.ipynb: not valid JSON" in md
    assert r.stdout.splitlines() == [str(out / "report.md")]


FIGURE = "svg \"<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'><circle cx='10' cy='10' r='8'/></svg>\""


@pytest.mark.parametrize("part", ["figures", "notebooks", ".cache"])
def test_a_symlink_in_the_folder_is_refused(tmp_path, part):
    """An earlier report whose figures/ (or notebooks/, .cache/) is a link
    to someone's folder: nothing there is deleted or overwritten, with or
    without --force; before, every PNG and SVG in the link's target went and
    a notebook there was overwritten."""
    nb = notebook(tmp_path / "nb.ipynb", [("code", FIGURE)])
    out = tmp_path / "out"
    assert report(str(nb), "-o", str(out), "--no-pdf").returncode == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("holiday.png", "drawing.svg", "nb.ipynb", "nb.key", "nb-cell1.svg"):
        (victim / name).write_text("someone's " + name)
    shutil.rmtree(out / part)
    (out / part).symlink_to(victim)
    for force in ([], ["--force"]):
        r = report(str(nb), "-o", str(out), "--no-pdf", *force)
        assert r.returncode == 2, r.stderr
        assert f"{out / part} is a symbolic link (to {victim})" in r.stderr, r.stderr
        assert "never through a link" in r.stderr
        assert sorted(p.name for p in victim.iterdir()) == sorted(
            ["holiday.png", "drawing.svg", "nb.ipynb", "nb.key", "nb-cell1.svg"])
        for p in victim.iterdir():
            assert p.read_text() == "someone's " + p.name
    assert r.stdout == ""


def test_only_files_the_report_wrote_are_deleted(tmp_path):
    """The previous run's figures go, as its manifest lists them; a picture
    someone put in figures/ stays (before, every PNG and SVG there went)."""
    nb = notebook(tmp_path / "nb.ipynb", [("code", FIGURE)])
    other = notebook(tmp_path / "other.ipynb", [("code", 'print "no figure"')])
    out = tmp_path / "out"
    assert report(str(nb), "-o", str(out), "--no-pdf").returncode == 0
    assert (out / "figures" / "nb-cell1.svg").exists()
    (out / "figures" / "mine.png").write_bytes(b"\x89PNG mine")
    (out / "figures" / "mine.svg").write_text("<svg/>")
    r = report(str(other), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    assert not (out / "figures" / "nb-cell1.svg").exists()
    assert (out / "figures" / "mine.png").read_bytes() == b"\x89PNG mine"
    assert (out / "figures" / "mine.svg").read_text() == "<svg/>"
    assert (out / ".syslab-report").read_text().splitlines()[1:] == ["report.md", "report.html"]
    assert report(str(nb), "-o", str(out), "--no-pdf").returncode == 0
    manifest = (out / ".syslab-report").read_text().splitlines()
    assert manifest[1:] == ["figures/nb-cell1.svg", "report.md", "report.html"], manifest
    # a manifest naming paths outside the report's own files is not obeyed
    (out / "keep.txt").write_text("kept")
    (out / ".syslab-report").write_text((out / ".syslab-report").read_text().splitlines()[0] +
                                        "\n../victim.png\nfigures/../keep.txt\nkeep.txt\nfigures/mine.png/\n")
    (tmp_path / "victim.png").write_text("outside")
    assert report(str(other), "-o", str(out), "--no-pdf", "--force").returncode == 0
    assert (out / "keep.txt").read_text() == "kept" and (tmp_path / "victim.png").read_text() == "outside"
    assert (out / "figures" / "mine.png").exists()


# ------------------------------------------------------------ labels

def test_duplicate_labels_are_refused_before_any_cell_runs(tmp_path):
    nb = notebook(tmp_path / "dup.ipynb", [
        ("code", 'print "ran"'),
        ("code", "#| label: fig-x\nplot (sweep i=1..3 { row y=i }) x=i y=y"),
        ("code", "#| label: fig-x\nplot (sweep i=1..3 { row y=i * i }) x=i y=y"),
    ])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out))
    assert r.returncode == 1
    assert f"{nb}: cells 2 and 3 both have the label 'fig-x'" in r.stderr
    assert "[1/" not in r.stderr and "nothing was run" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("label", ["../../evil", "a/b", "..", "sp ace"])
def test_unsafe_labels_are_refused(tmp_path, label):
    nb = notebook(tmp_path / "bad.ipynb", [("code", f"#| label: {label}\n1")])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out))
    assert r.returncode == 1
    assert f"the label '{label}' may only use letters, digits, '-' and '_'" in r.stderr
    assert not out.exists()


def test_same_label_in_two_notebooks_is_fine(tmp_path):
    a = notebook(tmp_path / "a.ipynb", [("markdown", "# A\n\n@fig-x is a's."), ("code", "#| label: fig-x\nplot (sweep i=1..3 { row y=i }) x=i y=y")])
    b = notebook(tmp_path / "b.ipynb", [("markdown", "# B\n\n@fig-x is b's."), ("code", "#| label: fig-x\nplot (sweep i=1..3 { row y=i * i }) x=i y=y")])
    out = tmp_path / "out"
    r = report(str(a), str(b), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "Figure 1 is a's." in md and "Figure 2 is b's." in md
    assert (out / "figures" / "a-fig-x.png").read_bytes() != (out / "figures" / "b-fig-x.png").read_bytes()


def test_notebooks_with_the_same_name_are_refused(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    a = notebook(tmp_path / "one" / "lab.ipynb", [("code", "1")])
    b = notebook(tmp_path / "two" / "lab.ipynb", [("code", "2")])
    r = report(str(a), str(b), "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and "have the same name 'lab'" in r.stderr


# ------------------------------------------------------------ kernels

LAUNCHER = """
import sys, time
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_name="syslab")
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=30)
if sys.argv[1]:
    kc.execute(sys.argv[1])
    time.sleep(0.5)
print(km.provisioner.process.pid, km.connection_file, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("code", ["", "sleep 60"], ids=["idle", "busy"])
def test_kernel_exits_when_its_parent_dies(tmp_path, code):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, code], stdout=subprocess.PIPE, text=True)
    try:
        pid, _ = launcher.stdout.readline().split()
        pid = int(pid)
        assert not gone(pid, 0.5)
        launcher.kill()
        launcher.wait()
        assert gone(pid, 2.0), "the kernel outlived its parent"
    finally:
        launcher.kill()


def test_kernel_exits_when_report_is_killed(tmp_path):
    nb = notebook(tmp_path / "slow.ipynb", [("code", "sleep 60")])
    proc = subprocess.Popen([SYSLAB_BIN, "report", str(nb), "-o", str(tmp_path / "out"), "--no-pdf"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kpid, conn = wait_for_kernel(proc.pid)
    time.sleep(0.5)
    proc.kill()
    proc.wait()
    assert gone(kpid, 2.0)
    assert not os.path.exists(conn) and not os.path.exists(os.path.dirname(conn))  # the key goes with it


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_report_and_its_kernel(tmp_path, sig):
    nb = notebook(tmp_path / "slow.ipynb", [("code", 'print "started"'), ("code", "sleep 60")])
    out = tmp_path / "out"
    proc = subprocess.Popen([SYSLAB_BIN, "report", str(nb), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kpid, conn = wait_for_kernel(proc.pid)
    assert os.path.exists(conn)
    time.sleep(1.0)
    start = time.time()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=20)
    assert time.time() - start < 5
    assert proc.returncode == -sig
    assert "stopped by signal" in stderr
    assert gone(kpid, 1.0), "the kernel is still running"
    assert not os.path.exists(conn) and not os.path.exists(os.path.dirname(conn))
    assert stdout == "" and not (out / "report.md").exists()
    # what ran is kept to read, but as a stopped run: no cache key lets the
    # next report take the half-run notebook as "unchanged since the last run"
    assert (out / "notebooks" / "slow.ipynb").exists()
    assert not (out / ".cache" / "slow.key").exists()
    assert "stopped by a signal while it ran" in stderr and "kernel died" not in stderr, stderr


def test_syslab_rebuilt_during_a_report(tmp_path):
    """A syslab rebuilt while a long report runs leaves the running one's
    file unlinked: the next notebook's kernel could not be started, and the
    error was the spawn's. It names the program and what to do; the
    notebooks that ran before are kept."""
    exe = tmp_path / "bin" / "syslab"
    exe.parent.mkdir()
    shutil.copy(SYSLAB_BIN, exe)
    first = notebook(tmp_path / "first.ipynb", [("code", "sleep 2")])
    second = notebook(tmp_path / "second.ipynb", [("code", 'print "ran"')])
    out = tmp_path / "out"
    proc = subprocess.Popen([str(exe), "report", str(first), str(second), "-o", str(out), "--no-pdf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_kernel(proc.pid)
    exe.unlink()
    shutil.copy(SYSLAB_BIN, exe)  # the rebuild: a new file under the same name
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    assert f"{exe} was replaced or removed while the report ran (rebuilt?)" in stderr, stderr
    assert (out / "notebooks" / "first.ipynb").exists()
    assert (out / ".cache" / "first.key").exists() and not (out / ".cache" / "second.key").exists()


def test_inline_script_and_style_go_with_their_content(tmp_path):
    """<script> and <style> written inside a paragraph (inline HTML) lost
    their tags but left their content as visible text in report.md and
    report.html; the docs say the content goes with the element. A tag left
    open takes the rest of its paragraph, as a browser's raw text would."""
    nb = notebook(tmp_path / "inline.ipynb", [
        ("markdown", "Before <b>bold</b> <script>var secret = 1;</script> after.\n\n"
                     "Text <style>p { color: red }</style> tail.\n\n"
                     "<i>x</i><script>alert(2)</script> and *more <script>alert(3)</script> emphasis*\n\n"
                     "Open <SCRIPT type='a'>alert(4) to the end\nof this paragraph\n\nNext paragraph stays."),
        ("code", 'print "ran"')])
    out = tmp_path / "out"
    r = report(str(nb), "-o", str(out), "--no-pdf")
    assert r.returncode == 0, r.stderr
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        if name == "report.html":
            text = text[text.index("<body"):]
            text = re.sub(r"<script>.*?</script>", "", text, flags=re.S)   # the report's own two scripts
        for gone in ("secret", "color: red", "alert(", "to the end", "of this paragraph"):
            assert gone not in text, (name, gone)
        for kept in ("Before <b>bold</b>", "after.", "tail.", "<i>x</i>", "emphasis", "Open", "Next paragraph stays."):
            assert kept in text, (name, kept)
