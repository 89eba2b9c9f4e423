"""LiveView on a run of every step: the heat view's layers, and cards that fill the width, in a real JupyterLab and Chromium."""

import nbformat
import pytest
from lab import open_and_run, wait_for_finished_watch
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme
from training import mse_train_step, source_text

# 240 steps, every one recorded, on a new batch each step, so the
# percentiles move from step to step as in real training. Five sites: two
# perturbed values and their gradients, and the output.
EVERY_STEP = (
    """
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import watch

class ThreeLayerPerturbedMLP(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 64, rngs=rngs)
        self.second = nnx.Linear(64, 64, rngs=rngs)
        self.head = nnx.Linear(64, 1, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("hidden", nnx.relu(self.first(x)))
        g = self.perturb("deeper", jnp.tanh(self.second(h)))
        out = self.head(g)
        self.sow(nnx.Intermediate, "out", out)
        return out

model = ThreeLayerPerturbedMLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)

"""
    + source_text(mse_train_step)
    + """

with watch(model, grads=True) as w:
    for step in range(240):
        x = jax.random.normal(jax.random.key(step), (64, 8))
        w.log(step=step, loss=mse_train_step(model, optimizer, x, jnp.sin(x.sum(axis=1, keepdims=True))))
print("recorded", w.view._progress["recorded"])
"""
)

ROOT = ".jcnb-live"
OVER = ".jcnb-live-card[data-site='0'] canvas.jcnb-live-over"
PIXELS = "c => c.toDataURL()"
LABELS = ".jcnb-live-trace-label, .jcnb-live-title, .jcnb-live-latest, .jcnb-live-kind"


def layer(page, name: str) -> str:
    return f".jcnb-live-layer-box[data-layer={name}]"


def cut_labels(page) -> list[str]:
    """The visible labels whose text does not fit their box."""
    return page.eval_on_selector_all(
        LABELS,
        "ls => ls.filter(l => l.getClientRects().length && l.scrollWidth > l.clientWidth)"
        ".map(l => `${l.className}: ${l.textContent} (${l.scrollWidth} > ${l.clientWidth})`)",
    )


def right_gap(page) -> float:
    """How far the right-most card ends from the grid's right edge, in pixels."""
    return page.eval_on_selector(
        ".jcnb-live-grid",
        """g => {
            const cards = [...g.querySelectorAll('.jcnb-live-card')].filter((c) => !c.hidden);
            return g.getBoundingClientRect().right - Math.max(...cards.map((c) => c.getBoundingClientRect().right));
        }""",
    )


def wait_drawn_at_card_width(page) -> None:
    """Waits until every card's chart is as wide as its card (drawn after the last resize)."""
    page.wait_for_function(
        """() => [
            ...[...document.querySelectorAll('.jcnb-live-card')].map((c) => [c.querySelector('.jcnb-live-panels'), c.querySelector('canvas.jcnb-live-over')]),
            ...[...document.querySelectorAll('.jcnb-live-scalar')].map((c) => [c.children[0], c.querySelector('canvas')]),
        ].every(([box, canvas]) => Math.abs(parseFloat(canvas.style.width) - Math.floor(box.clientWidth)) <= 1)""",
        timeout=30_000,
    )


@pytest.fixture(scope="module")
def every_step(lab, browser):
    """The page of a notebook that ran EVERY_STEP, its view drawn: both tests look at one run."""
    url, token, root = lab
    cells = [nbformat.v4.new_code_cell(EVERY_STEP)]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(
        nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel}), root / "live_layers.ipynb"
    )
    page = open_and_run(browser, url, token, "live_layers.ipynb")
    wait_for_finished_watch(page, timeout=240_000)
    page.wait_for_selector("text=/^recorded 240/", timeout=60_000)
    page.wait_for_selector(f"{OVER}[data-drawn='240']")
    yield page
    page.close()


def test_the_heat_views_layers_toggle_and_read_in_either_theme(every_step):
    page = every_step
    # By default the heat with its exact zeros apart, the bands as outlines
    # and the median; min and max (which jump with every batch) are off,
    # and say so in the key.
    assert page.get_attribute(ROOT, "data-layers") == "heat zeros bands median"
    assert not page.is_checked(layer(page, "extremes"))
    key = page.text_content(".jcnb-live-key")
    for text in ("7th–93rd", "16th–84th", "31st–69th", "median", "0th / 100th", "exact zeros, apart"):
        assert text in key, key
    # The ReLU's zeros, about half its values at every step, are drawn apart
    # at 0, a mark per step, and left out of the heat's shades.
    assert page.get_attribute(OVER, "data-zero-marks") == "240"
    page.locator(".jcnb-live-grid").scroll_into_view_if_needed()
    screenshot(page, "live_layers_default")

    # Each layer draws: turning one on or off changes the chart.
    pictures = {"default": page.eval_on_selector(OVER, PIXELS)}
    page.check(layer(page, "extremes"))
    assert page.get_attribute(ROOT, "data-layers") == "heat zeros bands median extremes"
    pictures["extremes"] = page.eval_on_selector(OVER, PIXELS)
    page.uncheck(layer(page, "extremes"))
    page.uncheck(layer(page, "zeros"))
    assert page.get_attribute(OVER, "data-zero-marks") == "0"
    pictures["no zeros"] = page.eval_on_selector(OVER, PIXELS)
    page.uncheck(layer(page, "heat"))
    pictures["bands only"] = page.eval_on_selector(OVER, PIXELS)
    screenshot(page, "live_layers_bands_only")
    page.uncheck(layer(page, "bands"))
    page.uncheck(layer(page, "median"))
    assert page.get_attribute(ROOT, "data-layers") == ""
    pictures["axes only"] = page.eval_on_selector(OVER, PIXELS)
    assert len(set(pictures.values())) == 5
    assert not blank_canvas(page, OVER)  # the axes stay

    # The layers are the view's: another histogram view hides their toggles,
    # and coming back finds them as they were left.
    page.check(layer(page, "heat"))
    page.click(".jcnb-live-view-button[data-view=offset]")
    assert not page.is_visible(".jcnb-live-layers")
    page.click(".jcnb-live-view-button[data-view=heat]")
    assert page.get_attribute(ROOT, "data-layers") == "heat"
    page.check(layer(page, "zeros"))
    page.check(layer(page, "bands"))
    page.check(layer(page, "median"))
    assert page.eval_on_selector(OVER, PIXELS) == pictures["default"]

    try:
        for theme, name in ((LIGHT, "live_layers_light"), (DARK, "live_layers_dark")):
            before = page.eval_on_selector(OVER, PIXELS)
            set_theme(page, theme)
            if theme == DARK:  # the canvases are drawn again in the theme's colours
                page.wait_for_function(
                    f'(before) => document.querySelector("{OVER}").toDataURL() !== before',
                    arg=before,
                    timeout=30_000,
                )
            wait_drawn_at_card_width(page)
            assert low_contrast_text(page, ROOT) == []
            page.locator(".jcnb-live-grid").scroll_into_view_if_needed()
            screenshot(page, name)
    finally:
        set_theme(page, LIGHT)


def test_cards_fill_the_width_and_no_label_is_cut(every_step):
    page = every_step
    # Cards fill the width at 1400 px and 900 px, with the side bar open or
    # closed, and no label is cut.
    for width, side_bar in ((1400, True), (1400, False), (900, False)):
        if not side_bar:
            page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        page.set_viewport_size({"width": width, "height": 1000})
        wait_drawn_at_card_width(page)
        page.locator(".jcnb-live-grid").scroll_into_view_if_needed()
        assert right_gap(page) <= 40, (width, side_bar, right_gap(page))
        assert cut_labels(page) == [], (width, side_bar)
        screenshot(page, f"live_layers_{width}px{'_side_bar' if side_bar else ''}")
    page.set_viewport_size({"width": 1400, "height": 1000})
    wait_drawn_at_card_width(page)
    before = page.eval_on_selector(OVER, PIXELS)
    try:
        set_theme(page, DARK)
        page.wait_for_function(  # the canvases are drawn again in the theme's colours
            f'(before) => document.querySelector("{OVER}").toDataURL() !== before', arg=before, timeout=30_000
        )
        wait_drawn_at_card_width(page)
        assert right_gap(page) <= 40 and cut_labels(page) == []
        page.locator(".jcnb-live-grid").scroll_into_view_if_needed()
        screenshot(page, "live_layers_1400px_dark")
    finally:
        set_theme(page, LIGHT)
