"""Fixtures: a real JupyterLab on 127.0.0.1 and Debian's Chromium driven by Playwright.

Tests wait on markers the widgets set when drawn (``.jcnb-ready``,
``data-drawn``), never on sleeps.
"""

from __future__ import annotations

import os

import nbformat
import pytest
from lab import CHROMIUM, CHROMIUM_ARGS, jupyter_lab, open_and_run, wait_for_idle_kernel


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server; yields (base_url, token, root_dir)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    root = tmp_path_factory.mktemp("lab")
    with jupyter_lab(root) as (url, token):
        yield url, token, root


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        yield context
        chromium.close()


def _write_notebook(root, name: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / name)


@pytest.fixture
def open_notebook(lab, browser):
    """Writes a notebook of the given code cells, opens it in JupyterLab, runs every cell."""
    url, token, root = lab
    pages = []

    def run(name: str, cells: list[str]):
        _write_notebook(root, name, cells)
        page = open_and_run(browser, url, token, name)
        pages.append(page)
        return page

    yield run
    for page in pages:
        page.close()


@pytest.fixture
def open_notebook7(notebook7, browser):
    """As ``open_notebook``, in Notebook 7."""
    url, token, root = notebook7
    pages = []

    def run(name: str, cells: list[str]):
        _write_notebook(root, name, cells)
        page = browser.new_page()
        pages.append(page)
        page.goto(f"{url}/notebooks/{name}?token={token}")
        wait_for_idle_kernel(page)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        return page

    yield run
    for page in pages:
        page.close()


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory):
    """A Notebook 7 server; yields (base_url, token, root_dir)."""
    root = tmp_path_factory.mktemp("notebook7")
    with jupyter_lab(root, app="notebook") as (url, token):
        yield url, token, root
