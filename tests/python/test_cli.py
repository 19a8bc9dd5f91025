"""The syslab command line: version, help, run, install."""
import json
import os
import pathlib

import pytest

from conftest import ROOT, syslab


def test_version_and_help(syslab_bin):
    r = syslab("--version")
    assert r.returncode == 0 and r.stdout.startswith("syslab ")
    r = syslab("help")
    assert r.returncode == 0 and "install" in r.stdout and "--connection-file CONNECTION_FILE" in r.stdout
    r = syslab("frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr


def test_commands_markdown_matches_docs(syslab_bin):
    r = syslab("help", "--commands-markdown")
    assert r.returncode == 0
    assert r.stdout == (ROOT / "docs" / "commands.md").read_text()


def test_run_script_file_and_stdin(syslab_bin, tmp_path):
    script = tmp_path / "s.syslab"
    script.write_text('x = 6\nprint "x is" x\neprint "careful"\nx * 7\n')
    r = syslab("run", str(script))
    assert r.returncode == 0
    assert r.stdout == "x is 6\n42\n"
    assert r.stderr == "careful\n"
    r = syslab("run", "-", input='print "from stdin"\n')
    assert r.returncode == 0 and r.stdout == "from stdin\n"


def test_run_reports_errors_with_location(syslab_bin, tmp_path):
    script = tmp_path / "bad.syslab"
    script.write_text("width = 3\nprint wdith\nprint \"never\"\n")
    r = syslab("run", str(script))
    assert r.returncode == 1
    assert "never" not in r.stdout
    assert "line 2, column 7" in r.stderr
    assert "did you mean 'width'?" in r.stderr
    r = syslab("run", str(tmp_path / "missing.syslab"))
    assert r.returncode == 2 and "cannot open" in r.stderr


def test_run_input_fails_clearly_without_a_terminal(syslab_bin):
    r = syslab("run", "-", input='name = input "who? "\n')
    assert r.returncode == 1 and "input is not available" in r.stderr


def test_device_gpu_is_refused_with_why_or_runs(syslab_bin):
    """Without a GPU, device=gpu and `to m gpu` fail naming why and what is
    allowed, and the script stops there; with one, the model goes and comes
    back with the same weights."""
    script = ("m = model mlp hidden=[8] inputs=4 classes=2 seed=1\n"
              "g = to m gpu\n"
              "back = to g cpu\n"
              "print (difference m back (dataset synthetic features=4 classes=2 train=8 test=8)).identical\n")
    r = syslab("run", "-", input=script)
    if r.returncode == 0:
        assert r.stdout.strip() == "true"
        return
    assert r.returncode == 1
    assert "line 2" in r.stderr and "needs a CUDA GPU" in r.stderr and "no GPU" in r.stderr
    assert "cpu runs everywhere" in r.stderr
    r = syslab("run", "-", input="m = lm tiny device=gpu\n")
    assert r.returncode == 1 and "needs a CUDA GPU" in r.stderr
    r = syslab("run", "-", input="m = lm tiny device=tpu\n")
    assert r.returncode == 1 and "allowed are cpu, gpu" in r.stderr


def test_run_notebook(syslab_bin):
    r = syslab("run", str(ROOT / "notebooks" / "example.ipynb"))
    assert r.returncode == 0, r.stderr
    assert "saving at 8 bits: 75 %" in r.stdout
    assert "countdown [" in r.stderr  # the progress bar's final state


def test_install_prefix_writes_a_complete_kernelspec(syslab_bin, tmp_path):
    r = syslab("install", "--prefix", str(tmp_path))
    assert r.returncode == 0, r.stderr
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "syslab"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"][1:] == ["kernel", "-f", "{connection_file}"]
    assert os.path.samefile(spec["argv"][0], syslab_bin)
    assert spec["display_name"] == "syslab" and spec["language"] == "syslab"
    assert spec["interrupt_mode"] == "message"
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec_dir / logo).stat().st_size > 100
    assert (spec_dir / "logo-64x64.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # installing again replaces the spec in place; no temporary folders remain
    assert syslab("install", "--prefix", str(tmp_path)).returncode == 0
    assert sorted(p.name for p in spec_dir.parent.iterdir()) == ["syslab"]


def test_install_command_names_the_program_the_spec_starts(syslab_bin, tmp_path):
    """The Debian package's spec names `syslab`, found on PATH (docs/package.md)."""
    r = syslab("install", "--prefix", str(tmp_path), "--command", "syslab")
    assert r.returncode == 0, r.stderr
    spec = json.loads((tmp_path / "share" / "jupyter" / "kernels" / "syslab" / "kernel.json").read_text())
    assert spec["argv"] == ["syslab", "kernel", "-f", "{connection_file}"]
    r = syslab("install", "--prefix", str(tmp_path), "--command", "")
    assert r.returncode == 2 and "--command needs the program's name or path" in r.stderr
    r = syslab("install", "--prefix", str(tmp_path), "--command")
    assert r.returncode == 2 and "PROGRAM must follow '--command'" in r.stderr


def test_install_sys_prefix_needs_an_environment(syslab_bin):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    r = syslab("install", "--sys-prefix", env=env)
    assert r.returncode == 2 and "VIRTUAL_ENV" in r.stderr


def test_install_user_is_found_by_jupyter(syslab_bin, tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME="")
    assert syslab("install", "--user", env=env).returncode == 0
    from jupyter_client.kernelspec import KernelSpecManager
    ksm = KernelSpecManager(kernel_dirs=[str(tmp_path / ".local/share/jupyter/kernels")])
    assert "syslab" in ksm.find_kernel_specs()
    resources = ksm.get_kernel_spec("syslab").resource_dir
    assert pathlib.Path(resources, "logo-svg.svg").exists()


def test_run_notebook_honours_the_reports_cell_tags(syslab_bin):
    """`syslab run` of a notebook ran skip-execution cells and stopped at a
    raises-exception cell's expected error: it now does as the report does,
    and says so."""
    r = syslab("run", str(ROOT / "tests" / "report" / "report_test.ipynb"))
    assert r.returncode == 0, r.stderr
    assert "never executed" not in r.stdout
    assert "cell 10: skipped (skip-execution)" in r.stderr
    assert "NameError: name 'no_such_variable' is not defined" in r.stderr
    assert "cell 11: the error above was expected (raises-exception); going on" in r.stderr
    assert "after the error" in r.stdout


def test_misspelt_subcommand_gets_a_suggestion(syslab_bin):
    r = syslab("reprot")
    assert r.returncode == 2 and "syslab: unknown command 'reprot'; did you mean 'report'?" in r.stderr
    r = syslab("instal", "--user")
    assert r.returncode == 2 and "did you mean 'install'?" in r.stderr


@pytest.mark.parametrize("args, why", [
    (["-j", "3x"], "-j takes a whole number from 1 to 256 (notebooks to run at once), not '3x'"),
    (["-j", "2.9"], "-j takes a whole number from 1 to 256 (notebooks to run at once), not '2.9'"),
    (["-j1000"], "-j takes a whole number from 1 to 256 (notebooks to run at once), not '1000'"),
    (["-j0"], "not '0'"),
    (["-j", ""], "not ''"),
    (["--jobs", "-1"], "--jobs takes a whole number from 1 to 256"),
    (["--timeout", "10s"], "--timeout takes a whole number from 1 to 86400 (seconds a cell may run), not '10s'"),
    (["--timeout", "1e9"], "not '1e9'"),
    (["--timeout", "0"], "not '0'"),
])
def test_command_line_numbers_are_strict(syslab_bin, tmp_path, args, why):
    """-j 3x and -j 2.9 were read as 3 and 2, -j1000 was clamped to 256 and
    --timeout 10s was read as 10: each is refused, naming the option and
    the range, before anything runs."""
    r = syslab("report", str(ROOT / "tests" / "report" / "second.ipynb"), "-o", str(tmp_path / "out"), *args)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
