"""A real JupyterLab on 127.0.0.1 and Debian's Chromium driven by Playwright.

Tests wait on markers the widgets set when drawn (``.jcnb-ready``,
``data-drawn``), never on sleeps.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

CHROMIUM = "/usr/bin/chromium"
# Chromium keeps trying hosts this machine cannot reach without these.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server; yields (base_url, token, root_dir)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    root = tmp_path_factory.mktemp("lab")
    settings = root / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No "get notified about Jupyter news" toast over the screenshots.
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"), JAX_PLATFORMS="cpu")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--allow-root",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.open_browser=False",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(root / "server.log", "w"),  # noqa: SIM115 - closed with the process
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (root / "server.log").read_text()[-3000:])
            time.sleep(0.2)  # polling a server that is starting, not waiting on a widget
    yield url, token, root
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def open_notebook(lab, browser):
    """Writes a notebook of the given code cells, opens it, runs every cell."""
    url, token, root = lab
    pages = []

    def run(name: str, cells: list[str]):
        nb = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(c) for c in cells],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        )
        nbformat.write(nb, root / name)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        pages.append(page)
        # A fresh workspace per notebook: JupyterLab would otherwise reopen the
        # tabs (and live widgets) of earlier tests.
        workspace = f"test-{secrets.token_hex(4)}"
        page.goto(f"{url}/lab/workspaces/{workspace}/tree/{name}?token={token}&reset")
        page.wait_for_function(
            "() => { const s = document.querySelector('#jp-main-statusbar');"
            " return s && s.textContent.includes('Idle'); }",
            timeout=120_000,
        )
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        return page

    yield run
    for page in pages:
        page.close()
