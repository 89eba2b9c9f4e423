"""Starting JupyterLab on 127.0.0.1 and Debian's Chromium, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

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


# A notebook cell that captures 1,000 sowed values into `cap`: the widget's
# large case, shared by the browser test and the benchmark.
THOUSAND_SITES = """
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import capture

class Many(nnx.Module):
    def __call__(self, x):
        for i in range(1000):
            self.sow(nnx.Intermediate, f"site{i:04d}", x * i)
        return x

many = Many()
with capture(many) as cap:
    many(jnp.ones((32, 32)))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _server(
    command: list[str], env: dict[str, str], cwd: pathlib.Path, log_path: pathlib.Path, probe: str
) -> Iterator[None]:
    """Runs a server until the block ends; enters once ``probe`` (a URL) answers.

    The server's output goes to ``log_path``, whose end the error shows if
    the server exits or does not answer within a minute.
    """
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(probe, timeout=2)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"{' '.join(command[2:4])} did not start:\n" + log_path.read_text()[-3000:]
                        ) from None
                    time.sleep(0.2)  # polling a server that is starting, not waiting on a widget
            yield
        finally:
            server.terminate()
            server.wait(timeout=30)


@contextlib.contextmanager
def jupyter_lab(root: pathlib.Path, app: str = "lab") -> Iterator[tuple[str, str]]:
    """Runs JupyterLab (or Notebook 7, ``app="notebook"``) serving ``root``; yields (base_url, token)."""
    settings = root / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    # No "get notified about Jupyter news" toast over the screenshots.
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"), JAX_PLATFORMS="cpu")
    command = [
        *(sys.executable, "-m", "jupyter", app, "--no-browser", "--ip=127.0.0.1", f"--port={port}"),
        *(f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root"),
        "--expose-app-in-browser",
    ]
    url = f"http://127.0.0.1:{port}"
    with _server(command, env, root, root / "server.log", f"{url}/api/status?token={token}"):
        yield url, token


def wait_for_idle_kernel(page) -> None:
    """Waits until the current notebook's kernel is idle, in JupyterLab or Notebook 7."""
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )


def wait_for_finished_watch(page, timeout: float) -> None:
    """Waits until a notebook's watch has ended and its cell is done.

    As the block ends, the view marks itself done; then the cell sends the
    view again, so the saved notebook keeps its final picture, and
    JupyterLab draws it anew. A test looks at that view, not the one it
    replaces, which may leave the page while the test reads it.
    """
    page.wait_for_selector(".jcnb-live[data-done=true]", timeout=timeout)
    wait_for_idle_kernel(page)
    page.wait_for_selector(".jcnb-live[data-done=true]", timeout=timeout)


def open_and_run(context, url: str, token: str, name: str):
    """Opens a notebook in a fresh workspace, waits for the kernel, runs all cells.

    ``context`` is a Playwright browser context (set its viewport there).
    """
    page = context.new_page()
    # A fresh workspace: JupyterLab would otherwise reopen earlier notebooks' tabs.
    page.goto(f"{url}/lab/workspaces/w-{secrets.token_hex(4)}/tree/{name}?token={token}&reset")
    wait_for_idle_kernel(page)
    # Not awaited: the command's promise settles only when every cell is done,
    # and a test may look at a cell while it still runs.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    return page


def run_in_kernel(page, code: str) -> str:
    """Runs code in the open notebook's kernel (not in a cell) and returns what it printed."""
    return page.evaluate(
        """async (code) => {
            const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
            const future = kernel.requestExecute({ code, store_history: false });
            let out = "";
            future.onIOPub = (msg) => {
                if (msg.header.msg_type === "stream") out += msg.content.text;
                if (msg.header.msg_type === "error") out += msg.content.ename + ": " + msg.content.evalue;
            };
            await future.done;
            return out;
        }""",
        code,
    )


@contextlib.contextmanager
def marimo_app(
    notebook: pathlib.Path, log_dir: pathlib.Path, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Serves a marimo notebook as an app (``marimo run``) on 127.0.0.1; yields its URL.

    Each page that opens the URL gets its own session, which runs every
    cell. The server runs in ``log_dir`` and writes its log there; ``env``
    adds environment variables for the notebook.
    """
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    command = [
        *(sys.executable, "-m", "marimo", "run", str(notebook), "--headless"),
        *("--host=127.0.0.1", f"--port={port}", "--no-token", "--no-sandbox"),
    ]
    url = f"http://127.0.0.1:{port}"
    with _server(command, env, log_dir, log_dir / "marimo.log", f"{url}/health"):
        yield url
