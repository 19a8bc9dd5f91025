"""The Debian package (`make deb`, docs/package.md), unpacked with dpkg-deb -x
into a temporary root instead of installed: its program runs from there, finds
its own files there (kernelspec logos, documentation), its kernelspec starts a
kernel that answers kernel_info, its Depends line names the package of
every shared library the program and the MPI module load, and the program
finds the CUDA module the package carries where nvcc built one.

The package is built (or brought up to date) by `make deb`; SYSLAB_DEB names a
package built beforehand, to test that one instead."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="dpkg-deb is not installed (not a Debian system)")


@pytest.fixture(scope="module")
def deb():
    given = os.environ.get("SYSLAB_DEB")
    if given:
        return pathlib.Path(given)
    build = subprocess.run(["make", "-s", "deb", f"JOBS={os.cpu_count()}"], cwd=ROOT, capture_output=True,
                           text=True, timeout=3600)
    assert build.returncode == 0, build.stdout + build.stderr
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    version = re.search(r"project\(syslab VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    path = ROOT / "build-deb" / f"syslab_{version}_{arch}.deb"
    assert path.is_file(), build.stdout
    return path


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True).stdout.strip()


def elf_files(root):
    return [p for p in root.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]


def test_the_package_holds_program_module_kernelspec_and_docs(deb, root):
    assert field(deb, "Package") == "syslab"
    usr = root / "usr"
    assert os.access(usr / "bin" / "syslab", os.X_OK)
    if shutil.which("mpicc"):  # the build found MPI, so the module is built and packed
        assert (usr / "lib" / "syslab" / "syslab_mpi.so").is_file()
    if shutil.which("nvcc"):  # the build found nvcc: the CUDA module too
        assert (usr / "lib" / "syslab" / "syslab_cuda.so").is_file()
    spec = usr / "share" / "jupyter" / "kernels" / "syslab"
    kernel = json.loads((spec / "kernel.json").read_text())
    assert kernel["argv"] == ["syslab", "kernel", "-f", "{connection_file}"]
    assert kernel["interrupt_mode"] == "message" and kernel["language"] == "syslab"
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec / logo).read_bytes() == (ROOT / "share" / "kernelspec" / logo).read_bytes()
        assert (usr / "share" / "syslab" / "kernelspec" / logo).is_file()
    doc = usr / "share" / "doc" / "syslab"
    assert (doc / "README.md").read_text() == (ROOT / "README.md").read_text()
    assert sorted(p.name for p in (doc / "docs").glob("*.md")) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_the_depends_line_names_every_library_loaded(deb, root):
    """dpkg -S names the package of each library the ELF files need (and of
    OpenBLAS, which the engine loads by its path on first use)."""
    depends = {alt.strip().split(" ")[0] for alt in re.split(r"[,|]", field(deb, "Depends"))}
    needed = set()
    for path in elf_files(root):
        dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
        needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    assert {"libzmq.so.5", "libjansson.so.4", "libcrypto.so.3", "libc.so.6"} <= needed
    packages = {}
    for lib in needed:
        owner = subprocess.run(["dpkg", "-S", f"*/{lib}"], capture_output=True, text=True).stdout
        packages[lib] = {line.split(":")[0] for line in owner.splitlines() if ":" in line}
    for lib, owners in packages.items():
        assert owners & depends, f"{lib} comes from {owners}, none of which is in Depends: {sorted(depends)}"
    assert {"libopenblas0-pthread", "gnuplot-nox", "libjs-katex"} <= depends
    assert "chromium" in field(deb, "Recommends") and "dataset-fashion-mnist" in field(deb, "Recommends")


def test_no_path_of_this_machine_is_in_the_package(root):
    here = str(ROOT).encode()
    for path in root.rglob("*"):
        if path.is_file():
            assert here not in path.read_bytes(), f"{path.relative_to(root)} holds {ROOT}"


def test_the_unpacked_program_runs_and_finds_its_files(root, tmp_path):
    syslab = root / "usr" / "bin" / "syslab"
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"))
    version = subprocess.run([str(syslab), "--version"], capture_output=True, text=True, timeout=60, env=env)
    assert version.returncode == 0 and re.match(r"syslab \d+\.\d+\.\d+", version.stdout), version
    script = tmp_path / "lab.syslab"
    script.write_text('x = [1, 2, 3]\nprint "sum:" (sum x)\nt = table a=[1, 2] b=[3, 4]\nprint t.nrows\n')
    run = subprocess.run([str(syslab), "run", str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0 and run.stdout == "sum: 6\n2\n", run
    # the CUDA module beside it (../lib/syslab/) is the one found: what it says is the driver's
    gpu = subprocess.run([str(syslab), "run", "-"], input="print (version).gpu\n", capture_output=True, text=True,
                         timeout=60, env=env).stdout
    if (root / "usr" / "lib" / "syslab" / "syslab_cuda.so").is_file():
        assert "cannot be loaded" not in gpu and "built without CUDA" not in gpu, gpu
    else:
        assert "built without CUDA" in gpu, gpu
    # `syslab install` copies the logos from the package's own share/
    installed = subprocess.run([str(syslab), "install", "--user"], capture_output=True, text=True, timeout=60, env=env)
    assert installed.returncode == 0, installed
    spec = tmp_path / "data" / "jupyter" / "kernels" / "syslab"
    assert json.loads((spec / "kernel.json").read_text())["argv"][0] == str(syslab)
    assert (spec / "logo-svg.svg").is_file()


def test_kernel_info_from_the_unpacked_kernelspec(root, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    usr = root / "usr"
    monkeypatch.setenv("JUPYTER_PATH", str(usr / "share" / "jupyter"))
    monkeypatch.setenv("PATH", f"{usr / 'bin'}{os.pathsep}{os.environ['PATH']}")
    spec = KernelSpecManager().get_kernel_spec("syslab")
    assert pathlib.Path(spec.resource_dir) == usr / "share" / "jupyter" / "kernels" / "syslab"
    km, kc = start_new_kernel(kernel_name="syslab", startup_timeout=30)
    try:
        msg_id = kc.kernel_info()
        reply = kc.get_shell_msg(timeout=10)
        while reply["parent_header"]["msg_id"] != msg_id:
            reply = kc.get_shell_msg(timeout=10)
        content = reply["content"]
        assert content["status"] == "ok" and content["implementation"] == "syslab"
        # the help links lead to the documentation the package installed
        urls = [link["url"] for link in content["help_links"]]
        assert urls == [f"file://{usr}/share/doc/syslab/docs/{name}" for name in ("commands.md", "language.md")]
        assert all(pathlib.Path(url[len("file://"):]).is_file() for url in urls)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
