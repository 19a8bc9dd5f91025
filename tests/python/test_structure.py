"""The shape of the code: no circles of files, no arrow back up a layer, no
file over 1,000 lines and no function over 150 (tests/structure.py reads the
includes and, with nm, the build's objects)."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_no_circles_no_back_edges_no_long_functions(syslab_bin):
    build = os.path.dirname(os.path.abspath(syslab_bin))
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "structure.py"), build],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 problem(s)" in r.stdout
