"""A notebook saved in JupyterLab or Notebook 7 and opened again shows each view's last picture.

The live widgets die with the kernel; the saved file keeps their pictures
(see jaxcapture_nb/jupyter/server_extension.py). Each test runs a notebook with a
CaptureView and a LiveView, saves it from the browser, and opens it again
twice: once with its kernel shut down, once with a new kernel. Re-running
the cells brings the live widgets back.
"""

import pathlib
import secrets
import shutil

import nbformat
import pytest
from lab import wait_for_idle_kernel
from page_checks import screenshot

CELLS = [
    """
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import capture, watch

class TwoLayerMLP(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 16, rngs=rngs)
        self.second = nnx.Linear(16, 2, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "hidden", h)
        return self.second(h)

model = TwoLayerMLP(nnx.Rngs(0))
x = jnp.linspace(-1.0, 1.0, 64).reshape(8, 8)
""",
    """
with capture(model) as cap:
    model(x)
cap.show()
""",
    """
step = nnx.jit(lambda m, x: m(x).sum())
with watch(model) as w:
    for i in range(20):
        w.log(step=i, loss=step(model, x * (1 + i / 10)))
""",
]

LIVE = ".jcnb-ready .jcnb-root[data-ready=true], .jcnb-ready .jcnb-live"
PICTURES = "table.jcnb-static, .jcnb-live-static"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _write(root, name):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in CELLS],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / name)


def _open(browser, address):
    page = browser.new_page()
    page.goto(address)
    wait_for_idle_kernel(page)
    return page


def _run_all(page):
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    # Done when every cell has run and the kernel is idle again.
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            const ran = panel.content.widgets.every((cell) => cell.model.executionCount !== null);
            return ran && panel.sessionContext.session?.kernel?.status === "idle";
        }""",
        timeout=180_000,
    )
    page.wait_for_function(f"() => document.querySelectorAll('{LIVE}').length === 2", timeout=60_000)


def _shown_pictures(page):
    """The saved pictures shown, after checking no output reads as a widget error."""
    page.wait_for_selector(PICTURES, timeout=60_000)
    text = page.inner_text(".jp-Notebook")
    assert "Error displaying widget" not in text and "Loading widget" not in text, text[:2000]
    assert page.query_selector_all(LIVE) == []
    return page.query_selector_all(PICTURES)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_a_reopened_notebook_shows_each_views_picture(app, lab, notebook7, browser):
    url, token, root = lab if app == "lab" else notebook7
    name = f"reopened_{app}_{secrets.token_hex(3)}.ipynb"
    _write(root, name)
    address = (
        f"{url}/lab/workspaces/w-{secrets.token_hex(4)}/tree/{name}?token={token}&reset"
        if app == "lab"
        else f"{url}/notebooks/{name}?token={token}"
    )
    page = _open(browser, address.replace("w-", "run-"))
    try:
        _run_all(page)
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=60_000
        )
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    finally:
        page.close()
    saved = nbformat.read(root / name, as_version=4)
    outputs = [o for cell in saved.cells for o in cell.outputs if "data" in o]
    assert len(outputs) == 2 and all(WIDGET_VIEW not in o.data for o in outputs)

    # Opened again, its kernel then shut down: the pictures, and no widget error.
    page = _open(browser, address)
    try:
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=60_000
        )
        assert len(_shown_pictures(page)) == 2
        screenshot(page, f"reopened_{app}_no_kernel")
    finally:
        page.close()

    # Opened again with a new kernel: the pictures until the cells run, then the live views.
    page = _open(browser, address)
    try:
        assert len(_shown_pictures(page)) == 2
        screenshot(page, f"reopened_{app}_new_kernel")
        _run_all(page)
        screenshot(page, f"reopened_{app}_rerun")
    finally:
        page.close()


def test_tutorial_8_opens_with_its_saved_pictures_and_no_kernel(lab, browser):
    """The attention patterns, the head-level sweep and the logit lens, as the saved tutorial keeps them."""
    url, token, root = lab
    name = "08_heads_and_the_logit_lens.ipynb"
    shutil.copy(pathlib.Path(__file__).parents[2] / "notebooks" / name, root / name)
    page = _open(browser, f"{url}/lab/workspaces/t8-{secrets.token_hex(4)}/tree/{name}?token={token}&reset")
    try:
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=60_000
        )
        pictures = "img[alt^='attention patterns'], table.jcnb-patching-static, table.jcnb-lens-static"
        page.wait_for_function(f'() => document.querySelectorAll("{pictures}").length === 3', timeout=60_000)
        text = page.inner_text(".jp-Notebook")
        assert "Error displaying widget" not in text and "Loading widget" not in text, text[:2000]
        # The attention picture is a PNG that drew, not a broken image.
        width = page.eval_on_selector("img[alt^='attention patterns']", "img => img.naturalWidth")
        assert width > 100
        page.locator("table.jcnb-lens-static").scroll_into_view_if_needed()
        screenshot(page, "tutorial_8_saved_pictures")
    finally:
        page.close()
