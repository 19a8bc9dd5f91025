"""Files a user names are opened by one function, slF_open (engine/lang/file.c):
without blocking, regular files only, read no further than their size.

A FIFO given as the notebook of `syslab report`, as the file of `syslab run`
or as a kernel's connection file blocked in open() for ever. These tests
name a FIFO to each and expect a prompt refusal naming it; and they read the
sources, so that no other open of a path creeps in: every call that opens a
path outside slF_open must be on ALLOWED below, with the reason its path is
one no user names."""
import os
import pathlib
import re
import subprocess

import pytest

from conftest import ROOT, SYSLAB_BIN, syslab

# the functions that open a file by its path
OPENERS = re.compile(r"(?<![\w.>])(fopen|freopen|open|openat|creat|gzopen|json_load_file|json_dump_file)\s*\(")

# (file, the line of the call, stripped) -> why its path is no user's
ALLOWED = {
    ("engine/lang/file.c", "int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);"):
        "slF_open itself: the one opener of the paths users name",
    ("engine/lang/budget.c", 'FILE *f = fopen("/proc/meminfo", "r");'): "a /proc file",
    ("engine/lang/budget.c", 'FILE *f = fopen("/proc/self/statm", "r");'): "a /proc file",
    ("engine/kernels/memory.c", 'FILE *f = fopen(file, "r");'):
        "proc_kb: called with /proc/self/status and /proc/meminfo only",
    ("engine/kernels/memory.c", 'FILE *f = fopen("/proc/self/clear_refs", "w");'): "a /proc file",
    ("engine/kernels/machine.c", 'FILE *f = fopen("/proc/cpuinfo", "r");'): "a /proc file",
    ("mpi/mpi.c", 'int p[2], null = open("/dev/null", O_RDONLY | O_CLOEXEC);'): "/dev/null, for a child's input",
    ("mpi/mpi.c", 'FILE *f = fopen(path, "r");'): "/proc/PID/stat of the processes listed in /proc",
    ("cli/install.c", 'FILE *in = fopen(from, "rb");'): "a logo from syslab's own share folder",
    ("cli/install.c", 'FILE *out = fopen(to, "wb");'): "into the folder the install has just made (mkdir)",
    ("cli/install.c", "int rc = json_dump_file(spec, path, JSON_INDENT(2));"):
        "kernel.json, into the folder the install has just made (mkdir)",
    ("report/export.c", 'FILE *f = fopen(path, "rb");'): "KaTeX from the system's libjs-katex folder",
    ("report/pdf.c", "int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);"):
        "the browser's log, in the scratch folder the report made (mkdtemp)",
    ("report/pdf.c", "int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);"):
        "the browser's PDF, in the scratch folder the report made (mkdtemp)",
    ("report/folder.c", "int figures = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);"):
        "a folder (O_DIRECTORY): a FIFO there fails at once with ENOTDIR, never blocks",
}

SOURCE_DIRS = ["engine", "cli", "report", "kernel", "plotting", "mpi", "cuda"]


def code_lines(text):
    """the source with comments and string literals blanked, line for line"""
    out, i, n = [], 0, len(text)
    state = None
    while i < n:
        c = text[i]
        if state is None:
            if text.startswith("/*", i):
                state, i = "block", i + 2
                out.append("  ")
                continue
            if text.startswith("//", i):
                state = "line"
            elif c == '"':
                state = "string"
            elif c == "'":
                state = "char"
            out.append(c)
        elif state == "block":
            if text.startswith("*/", i):
                state, i = None, i + 2
                out.append("  ")
                continue
            out.append("\n" if c == "\n" else " ")
        elif state == "line":
            if c == "\n":
                state = None
            out.append(c if c == "\n" else " ")
        else:
            quote = '"' if state == "string" else "'"
            if c == "\\":
                out.append("  ")
                i += 2
                continue
            if c == quote:
                state = None
            out.append(c if c in (quote, "\n") else "x")
        i += 1
    return "".join(out).split("\n")


def test_only_slF_open_opens_paths():
    found = set()
    problems = []
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".c", ".h", ".cu"):
                continue
            rel = str(path.relative_to(ROOT))
            text = path.read_text()
            raw = text.split("\n")
            for number, line in enumerate(code_lines(text)):
                if not OPENERS.search(line):
                    continue
                key = (rel, raw[number].strip())
                if key in ALLOWED:
                    found.add(key)
                else:
                    problems.append(f"{rel}:{number + 1}: {raw[number].strip()}")
    assert not problems, ("these open a path outside slF_open (engine/lang/file.c); open a file a user names "
                          "with slF_open, or add the call to ALLOWED with why no user names its path:\n  " +
                          "\n  ".join(problems))
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"ALLOWED names calls that are gone: {stale}"


def test_the_grep_sees_what_it_should():
    lines = code_lines('x = fopen(p, "r"); /* open(q) */ s = "open(r)"; y = slF_open(p); d->open(); z = open(p, 0);')
    assert [m.group(1) for m in OPENERS.finditer(lines[0])] == ["fopen", "open"]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "named.ipynb"
    os.mkfifo(path)
    return path


def test_report_refuses_a_fifo_notebook(fifo, tmp_path):
    r = syslab("report", str(fifo), "-o", str(tmp_path / "out"), "--no-pdf", timeout=60)
    assert r.returncode == 1
    assert f"'{fifo}' is not a regular file (a pipe, socket or device): a notebook must be a regular file" in r.stderr


def test_run_refuses_a_fifo_and_devices(fifo):
    for path in (str(fifo), "/dev/zero", "/dev/urandom"):
        r = syslab("run", path, timeout=60)
        assert r.returncode == 2 and f"'{path}' is not a regular file" in r.stderr, r.stderr


def test_kernel_refuses_a_fifo_connection_file(fifo):
    r = subprocess.run([SYSLAB_BIN, "kernel", "-f", str(fifo)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "is not a regular file" in r.stderr


def test_training_refuses_a_fifo_checkpoint(fifo, tmp_path):
    """train's checkpoint= is a path the user names: a FIFO there is refused
    at once, neither read as a checkpoint nor left waiting for a writer"""
    script = tmp_path / "ckpt.syslab"
    script.write_text("d = dataset synthetic train=64 test=16 features=8\nm = model mlp data=d hidden=[4]\n"
                      f'h = train m d epochs=1 batch=16 checkpoint="{fifo}" checkpoint_every=1\n')
    r = syslab("run", str(script), timeout=60)
    assert r.returncode != 0
    assert f"cannot resume: '{fifo}' is not a regular file" in r.stderr, r.stderr
