"""The shape of the code: no circles of files, no arrow back up a layer, no
file over 1,000 lines and no function over 150 (tests/structure.py reads the
includes and, with nm, the build's objects); no file that clang-format 14
would change (unless SYSLAB_CHECK_FORMAT=0)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_no_circles_no_back_edges_no_long_functions(syslab_bin):
    build = os.path.dirname(os.path.abspath(syslab_bin))
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "structure.py"), build],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 problem(s)" in r.stdout


def load_structure(monkeypatch, root, check):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import structure
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(structure, "ROOT", str(root))
    monkeypatch.setattr(structure, "CHECK_FORMAT", check)
    return structure


def git_tree(tmp_path, files):
    """a git checkout holding .clang-format and the given files, all tracked"""
    (tmp_path / ".clang-format").write_text((ROOT / ".clang-format").read_text())
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    return tmp_path


def clang_format_14():
    exe = shutil.which("clang-format")
    if not exe:
        return False
    return " version 14." in subprocess.run([exe, "--version"], capture_output=True, text=True).stdout


def test_format_check_names_each_file_clang_format_would_change(monkeypatch, tmp_path):
    if not clang_format_14():
        pytest.skip("clang-format 14 is not on PATH: install the Debian package clang-format (make deps does)")
    tree = git_tree(tmp_path, {
        "kept.c": "static int twice(int x) { return 2 * x; }\n",
        "bad.c": "static int  twice(int x)\n{\n    return 2*x;\n}\n",
        "bad.cuh": "__device__ float half(float *x) {return x[0]/2;}\n",
        "notes.txt": "not C:   left alone\n",
    })
    structure = load_structure(monkeypatch, tree, True)
    problems, note = structure.unformatted()
    assert [p.split()[1] for p in problems] == ["bad.c", "bad.cuh"], problems
    assert "3 files checked" in note


def test_format_check_is_off_when_asked(monkeypatch, tmp_path):
    tree = git_tree(tmp_path, {"bad.c": "static int  twice(int x)\n{\n    return 2*x;\n}\n"})
    structure = load_structure(monkeypatch, tree, False)
    problems, note = structure.unformatted()
    assert problems == [] and "SYSLAB_CHECK_FORMAT=0" in note


def test_format_check_says_why_it_skipped_another_version(monkeypatch, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "clang-format").write_text("#!/bin/sh\necho 'clang-format version 99.0.1'\n")
    (fake / "clang-format").chmod(0o755)
    (tmp_path / "tree").mkdir()
    tree = git_tree(tmp_path / "tree", {"bad.c": "static int  twice(int x)\n{\n    return 2*x;\n}\n"})
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    structure = load_structure(monkeypatch, tree, True)
    problems, note = structure.unformatted()
    assert problems == []
    assert note.startswith("format: skipped") and "version 99.0.1" in note and "clang-format 14" in note
