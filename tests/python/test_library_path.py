"""Where the programs the build makes look for their shared libraries.

An empty entry in an ELF file's RUNPATH (a trailing ':') or a relative one
means the current folder: running `syslab` in a folder that holds a file
named like one of its libraries (a notebook folder from someone else) would
run that file's code. Every program and module the build makes (syslab, the
MPI module, the unit tests, the benchmarks, the fuzz targets) must search
absolute folders only, and a library planted in the current folder must not
be loaded."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import SYSLAB_BIN


def built_elf_files():
    """The ELF files at the top of the build folder: programs and modules."""
    build = pathlib.Path(SYSLAB_BIN).resolve().parent
    found = []
    for path in sorted(build.iterdir()):
        if not path.is_file() or path.suffix in (".a", ".o"):
            continue
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF":
                found.append(path)
    return found


def dynamic_section(path):
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    search = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", out)
    return search, needed


def test_no_build_output_searches_the_current_folder():
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) is not installed")
    files = built_elf_files()
    names = {p.name for p in files}
    assert "syslab" in names, names
    assert any(n.startswith("test_") for n in names), names
    bad = []
    for path in files:
        search, _ = dynamic_section(path)
        for value in search:
            for entry in value.split(":"):
                # $ORIGIN is the program's own folder, not the current one
                if not (entry.startswith("/") or entry.startswith("$ORIGIN")):
                    bad.append(f"{path.name}: {value!r} has the entry {entry!r}")
    assert not bad, "\n".join(bad)


PLANTED = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
  int fd = open("MARKER", O_WRONLY | O_CREAT, 0600);
  if (fd >= 0) close(fd);
}
"""


def test_a_library_planted_in_the_current_folder_is_not_loaded(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not shutil.which("readelf"):
        pytest.skip("needs a C compiler and readelf")
    marker = tmp_path / "planted-ran"
    src = tmp_path / "planted.c"
    src.write_text(PLANTED.replace("MARKER", str(marker)))
    lib = tmp_path / "planted.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    _, needed = dynamic_section(SYSLAB_BIN)
    # named like the cmark-gfm extensions library, which syslab needs and
    # does not call before main: a copy found first would run its code
    planted = [n for n in needed if n.startswith("libcmark-gfm-extensions")]
    assert planted, needed
    folder = tmp_path / "downloaded-notebooks"
    folder.mkdir()
    for name in planted:
        shutil.copy(lib, folder / name)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run([os.path.abspath(SYSLAB_BIN), "--version"], cwd=folder, capture_output=True, text=True,
                       timeout=60, env=env)
    assert not marker.exists(), "a library from the current folder was loaded"
    assert r.returncode == 0 and r.stdout.startswith("syslab "), (r.returncode, r.stdout, r.stderr)
