"""A real JupyterLab in a real browser: open the Lab 0 notebook, run every
cell with the syslab kernel, and check what a student would see: with
jupyterlab-myst, the Observations' {eval} values are the report's numbers,
live after a run and from the values an executed notebook of the report
keeps."""
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT, syslab

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "build" / "test-artifacts"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")


@pytest.fixture(scope="module")
def lab0_report(tmp_path_factory):
    """Lab 0 as syslab report runs it: the Observations' numbers in
    report.md, and the executed notebook with its values in the metadata."""
    out = tmp_path_factory.mktemp("report")
    r = syslab("report", str(ROOT / "notebooks" / "lab0.ipynb"), "-o", str(out), "--no-pdf", timeout=600)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    observations = md[md.index("## Observations"):md.index("## Conclusion")]
    numbers = NUMBER.findall(observations)
    assert len(numbers) >= 12, observations
    return numbers, out / "notebooks" / "lab0.ipynb"


def open_notebook(p, base, token, name):
    """Chromium on JupyterLab with one notebook open: (browser, page)."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60000)
    return browser, page


def observations(page, screenshot):
    """The Observations cell's text once jupyterlab-myst shows values there
    (until then it shows each expression as code)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-MarkdownCell')]
             .some(c => c.innerText.includes('Observations') && !c.innerText.includes('base.nodes'))""",
        timeout=60000)
    cell = page.locator(".jp-MarkdownCell", has_text="Observations").first
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cell.screenshot(path=str(ARTIFACTS / screenshot))
    return cell.inner_text()


def assert_like_the_report(text, numbers):
    assert "{{" not in text and "}}" not in text and "{eval" not in text, text
    assert NUMBER.findall(text[text.index("Observations"):]) == numbers, text


@pytest.fixture
def jupyterlab(tmp_path, lab0_report):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install the Debian package chromium")
    try:
        import jupyterlab_myst  # noqa: F401  (the extension that evaluates {eval})
    except ImportError:
        pytest.fail("jupyterlab-myst is missing: pip install -r tests/requirements.txt (make venv)")
    shutil.copy(ROOT / "notebooks" / "lab0.ipynb", tmp_path / "lab0.ipynb")
    shutil.copy(lab0_report[1], tmp_path / "executed.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    # every cell stays in the page (no windowing), so the whole notebook can be checked
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}", "--ServerApp.port_retries=0",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        + (["--allow-root"] if os.geteuid() == 0 else []),
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "server.log", "w"), env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            break
        except OSError:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            time.sleep(0.3)
    else:
        server.kill()
        pytest.fail("JupyterLab did not start within 60 s")
    yield base, token, tmp_path
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()


def test_lab0_runs_in_jupyterlab(jupyterlab, lab0_report):
    from playwright.sync_api import sync_playwright

    base, token, tmp_path = jupyterlab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser, page = open_notebook(p, base, token, "lab0.ipynb")
        # the notebook names the syslab kernel: JupyterLab starts it and shows it in the toolbar
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-KernelName, .jp-Toolbar-kernelName')]"
            ".some(e => e.textContent.includes('syslab'))", timeout=60000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60000)
        page.click("text=Run", timeout=10000)
        page.click("li >> text=Run All Cells", timeout=10000)
        code_cells = page.locator(".jp-CodeCell").count()
        assert code_cells >= 10
        page.wait_for_function(
            f"""() => {{
              const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
              return prompts.length === {code_cells} && prompts.every(t => /\\[\\d+\\]/.test(t));
            }}""", timeout=180000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60000)
        # jupyterlab-myst asked the kernel for the Observations' values when Run All reached the cell
        observed = observations(page, "jupyterlab-lab0-observations.png")
        page.screenshot(path=str(ARTIFACTS / "jupyterlab-lab0.png"), full_page=True)
        # the editor colours the language with the mode the kernel names
        # (Ruby's): the constant true (plain text in Python's mode) and
        # strings stand out from plain text
        colours = page.evaluate(
            """() => {
              const spans = [...document.querySelectorAll('.jp-CodeCell .cm-line span')];
              const of = word => spans.find(s => s.textContent === word);
              const plain = getComputedStyle(document.querySelector('.jp-CodeCell .cm-line')).color;
              return {plain, true: of('true') && getComputedStyle(of('true')).color,
                      string: (spans.find(s => s.textContent.startsWith('"')) || null) &&
                              getComputedStyle(spans.find(s => s.textContent.startsWith('"'))).color};
            }""")
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
        images = page.locator(".jp-OutputArea-output img").count()
        tables = page.locator(".jp-OutputArea-output table").count()
        text = page.locator(".jp-Notebook").inner_text()
        browser.close()
    assert errors == 0, text[-2000:]
    assert colours["true"] and colours["true"] != colours["plain"], colours
    assert colours["string"] and colours["string"] != colours["plain"], colours
    assert images >= 1
    assert tables >= 4
    assert "identical: true" in text
    assert "unchanged: true" in text
    assert_like_the_report(observed, lab0_report[0])


def test_executed_notebook_shows_its_values_without_a_run(jupyterlab, lab0_report):
    """The report's executed notebook keeps the values where jupyterlab-myst
    reads them: opened in JupyterLab, nothing run, the Observations read as
    report.md does."""
    from playwright.sync_api import sync_playwright

    base, token, tmp_path = jupyterlab
    with sync_playwright() as p:
        browser, page = open_notebook(p, base, token, "executed.ipynb")
        text = observations(page, "jupyterlab-lab0-executed-observations.png")
        prompts = [t.strip() for t in page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()]
        browser.close()
    assert_like_the_report(text, lab0_report[0])
    # the counts are the report's run, not a new one: this page ran nothing
    assert prompts and all(re.fullmatch(r"\[\d+\]:", t) for t in prompts), prompts
