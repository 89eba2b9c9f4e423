"""The marimo tutorial runs as a script, printing its tables, and exports to HTML, on the CPU."""

import html
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("marimo")

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "05_marimo_capture.py"
ENV = dict(os.environ, JAX_PLATFORMS="cpu")


def run(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


def test_the_notebook_runs_as_a_script_and_prints_its_results(tmp_path):
    done = run(sys.executable, str(NOTEBOOK), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # A script run shows no cell outputs, so the last cell prints them; any
    # text on stderr is a warning.
    assert done.stderr == ""
    out = done.stdout
    assert out.startswith("capture(model):\npath    name      call  type")
    assert re.search(r"^\(root\)\s+features\s+0\s+Intermediate\s+\(16,8,8,8\)", out, re.MULTILINE), out
    assert re.search(r"^bn\s+__call__\s+0\s", out, re.MULTILINE), out
    # keep="summary" keeps the summary of the last of the loop's 100 calls.
    steps = out.split('keep="summary"')[1]
    assert re.search(r"^\(root\)\s+logits\s+99\s+Intermediate", steps, re.MULTILINE), out
    assert out.rstrip().endswith("First non-finite site: log_hidden (19 of (8, 4) values).")


def test_the_notebook_exports_to_html_with_its_results(tmp_path):
    # A copy: the export also saves a session snapshot in __marimo__/ beside the notebook.
    notebook = tmp_path / NOTEBOOK.name
    shutil.copy(NOTEBOOK, notebook)
    out = tmp_path / "capture.html"
    done = run(
        sys.executable,
        "-m",
        "marimo",
        "export",
        "html",
        str(notebook),
        "-o",
        str(out),
        "--no-sandbox",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The page embeds each cell's output as escaped HTML in a JSON string.
    page = html.unescape(out.read_text().encode().decode("unicode_escape", errors="replace"))
    assert "First non-finite site: <code>log_hidden</code> (19 of (8, 4) values)." in page
    assert "Traceback" not in page
    # Under marimo the tables are cell outputs; only a script run prints them.
    assert "First non-finite site: log_hidden (" not in page
    # Both captures' widgets are in the page, as marimo's anywidget elements.
    assert page.count("<marimo-anywidget ") == 2
