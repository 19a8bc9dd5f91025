"""A real JupyterLab in a real browser: open the Lab 0 notebook, run every
cell with the syslab kernel, and check what a student would see."""
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "build" / "test-artifacts"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install the Debian package chromium")
    shutil.copy(ROOT / "notebooks" / "lab0.ipynb", tmp_path / "lab0.ipynb")
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


def test_lab0_runs_in_jupyterlab(jupyterlab):
    from playwright.sync_api import sync_playwright

    base, token, tmp_path = jupyterlab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/lab/tree/lab0.ipynb?token={token}")
        # the notebook names the syslab kernel: JupyterLab starts it and shows it in the toolbar
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60000)
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
