"""PatchingView in a real JupyterLab, Notebook 7 and Chromium: the heatmap, its read-out, a clicked cell, the toggle, both themes."""

import csv
import json
import pathlib
import struct

import pytest
from lab import run_in_kernel, wait_for_idle_kernel
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

# A 3-layer model over 6 tokens, swept at every layer and position, with the
# attribution estimate beside it and the last position's probabilities kept.
SETUP = """
import jax, jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import attribution_patching, patching_sweep

class Layer(nnx.Module):
    def __init__(self, rngs):
        self.mix = nnx.Linear(8, 8, rngs=rngs)

    def __call__(self, x):
        return x + nnx.gelu(self.mix(jnp.cumsum(x, axis=1) / 3))

class TinyLM(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(5, 8, rngs=rngs)
        self.layers = nnx.List([Layer(rngs) for _ in range(3)])
        self.unembed = nnx.Linear(8, 5, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.unembed(x)

lm = TinyLM(nnx.Rngs(0))
clean, corrupted = jnp.array([[1, 2, 3, 4, 0, 2]]), jnp.array([[3, 2, 3, 4, 0, 2]])
metric = lambda logits: logits[0, -1, 1] - logits[0, -1, 3]
sites = [f"layers.{i}.__call__" for i in range(3)]
words = ["<s>", "the", "cat", "sat", "on", "mat"]
exact = patching_sweep(lm, clean, corrupted, metric, sites, positions=range(6),
                       readout=lambda logits: jax.nn.softmax(logits[0, -1]), readout_labels=list("abcde"),
                       labels=words)
estimate = attribution_patching(lm, clean, corrupted, metric, sites, positions=range(6))
view = exact.show(estimate)
view
"""

ROOT = ".jcnb-ready .jcnb-patching"
HEAT = ".jcnb-patching canvas.jcnb-patch-heat[data-drawn='1']"


def cell_point(page, method: str, site: int, position: int) -> tuple[float, float]:
    """The page coordinates of a cell's centre in the heatmap of ``method``."""
    canvas = f"{HEAT}[data-method='{method}']"
    box = page.locator(canvas).bounding_box()
    d = page.eval_on_selector(canvas, "c => c.dataset")
    x = box["x"] + float(d["left"]) + (position + 0.5) * float(d["cellW"])
    y = box["y"] + float(d["top"]) + (site + 0.5) * float(d["cellH"])
    return x, y


def check_view(page, name: str) -> None:
    """Hover, click, toggle: what every host shows the same."""
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    # Both results side by side, the exact sweep first.
    assert page.get_attribute(".jcnb-patching", "data-shown") == "both"
    methods = page.eval_on_selector_all(HEAT, "cs => cs.map(c => c.dataset.method)")
    assert methods == ["exact", "attribution"]
    assert not blank_canvas(page, f"{HEAT}[data-method='exact']")
    # Side by side, cells keep a size that can be pointed at (the maps scroll rather than crush).
    widths = page.eval_on_selector_all(HEAT, "cs => cs.map(c => Number(c.dataset.cellW))")
    assert min(widths) >= 16, widths
    # Every recovery lies within +-1 here: the colour bar keeps its plain scale, and says so only when widened.
    scale = float(run_in_kernel(page, "print(max(abs(exact.recovery).max(), abs(estimate.recovery).max()))"))
    title = page.text_content(".jcnb-patch-scale-title")
    assert title == ("recovery" if scale <= 1 else f"recovery, to \u00b1{scale:.4g}"), (title, scale)

    # Hovering a cell reads out its site, position and both results.
    x, y = cell_point(page, "exact", 1, 4)
    page.mouse.move(x, y)
    tip = page.wait_for_selector(".jcnb-patching .jcnb-tooltip:not([hidden])", timeout=10_000)
    lines = tip.text_content().split("\n")
    assert lines[:2] == ["layers.1.__call__", "position 4 (on)"], lines
    assert lines[2].startswith("exact: recovery ") and lines[3].startswith("attribution: recovery "), lines

    # Clicking it shows the patched run beside the clean and corrupted ones.
    page.mouse.click(x, y)
    page.wait_for_selector(".jcnb-patch-readout[data-drawn='1']", timeout=10_000)
    title = page.text_content(".jcnb-patch-detail-title")
    assert title == "layers.1.__call__ patched at position 4 (on)", title
    bars = json.loads(page.get_attribute(".jcnb-patch-metric", "data-values"))
    assert [run for run, _ in bars] == ["corrupted", "patched", "attribution", "clean"], bars
    # The bars are the kernel's numbers.
    expected = run_in_kernel(
        page, "print(*[exact.corrupted, exact.effect[1, 4], estimate.effect[1, 4], exact.clean])"
    )
    assert [value for _, value in bars] == pytest.approx([float(v) for v in expected.split()], rel=1e-9)
    assert not blank_canvas(page, ".jcnb-patch-readout")
    # The readout's axis ends on a tick at or past its tallest bar.
    tallest = run_in_kernel(
        page,
        "print(max(exact.readouts[1, 4].max(), exact.clean_readout.max(), exact.corrupted_readout.max()))",
    )
    assert float(page.get_attribute(".jcnb-patch-readout", "data-top")) >= float(tallest)
    screenshot(page, f"patching_view_{name}")

    # The numbers download as CSV, a row per result, site and position, as to_csv writes them;
    # the heatmaps as one PNG.
    with page.expect_download() as download:
        page.click(".jcnb-patch-export-button[data-format=csv]")
    assert download.value.suggested_filename == "patching.csv"
    rows = list(csv.reader(pathlib.Path(download.value.path()).read_text().splitlines()))
    assert (
        rows[0] == ["method", "site", "position", "label", "metric", "recovery"]
        and len(rows) == 1 + 2 * 3 * 6
    )
    kernel = list(csv.reader(run_in_kernel(page, "print(exact.to_csv(), end='')").strip().splitlines()))
    assert [row[:4] for row in rows[1:19]] == [row[:4] for row in kernel[1:]]
    assert [float(row[4]) for row in rows[1:19]] == pytest.approx(
        [float(row[4]) for row in kernel[1:]], rel=1e-12
    )
    with page.expect_download() as download:
        page.click(".jcnb-patch-export-button[data-format=png]")
    picture = pathlib.Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename == "patching.png" and picture[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", picture[16:24])
    assert width > 400 and height > 80, (width, height)
    # And as SVG: a rectangle per result, site and position, the sites and tokens as text.
    with page.expect_download() as download:
        page.click(".jcnb-patch-export-button[data-format=svg]")
    assert download.value.suggested_filename == "patching.svg"
    svg = pathlib.Path(download.value.path()).read_text()
    assert svg.startswith("<svg") and svg.count('<rect class="cell"') == 2 * 3 * 6
    assert "layers.1.__call__" in svg and ">on</text>" in svg and "attribution patching: " in svg
    # The picture as a browser draws it, to look at.
    drawn = page.context.new_page()
    drawn.set_content(svg)
    screenshot(drawn, f"patching_view_svg_{name}")
    drawn.close()

    # The toggle shows one result; the kernel's view follows.
    page.click(".jcnb-patch-choice[data-shown='exact']")
    page.wait_for_selector(".jcnb-patching[data-shown='exact']")
    assert page.locator(HEAT).count() == 1
    assert page.get_attribute(".jcnb-patch-choice[data-shown='exact']", "aria-pressed") == "true"


def test_patching_view_in_jupyterlab_light_and_dark(open_notebook):
    page = open_notebook("patching_view.ipynb", [SETUP])
    check_view(page, "lab")
    # The kernel holds the state the page set.
    wait_for_idle_kernel(page)
    assert run_in_kernel(page, "print(view.shown, view.selected)").strip() == "exact [1, 4]"
    # And the page follows the kernel.
    run_in_kernel(page, "view.shown = 'attribution'; view.selected = [2, 0]")
    page.wait_for_selector(".jcnb-patching[data-shown='attribution']")
    page.wait_for_function(
        "() => document.querySelector('.jcnb-patch-detail-title')?.textContent.endsWith('position 0 (<s>)')"
    )
    page.click(".jcnb-patch-choice[data-shown='both']")
    page.wait_for_selector(".jcnb-patching[data-shown='both']")
    pixels = {}
    try:
        for theme, name in ((LIGHT, "light"), (DARK, "dark")):
            set_theme(page, theme)
            page.locator(ROOT).scroll_into_view_if_needed()
            # The heatmap repaints with the theme's ink.
            page.wait_for_function(
                """([sel, prev]) => document.querySelector(sel).toDataURL() !== prev""",
                arg=[f"{HEAT}[data-method='exact']", pixels.get("light", "")],
                timeout=30_000,
            )
            pixels[name] = page.eval_on_selector(f"{HEAT}[data-method='exact']", "c => c.toDataURL()")
            assert low_contrast_text(page, ROOT) == [], name
            screenshot(page, f"patching_view_{name}")
    finally:
        set_theme(page, LIGHT)
    assert pixels["light"] != pixels["dark"]


def test_patching_view_in_notebook_7(open_notebook7):
    check_view(open_notebook7("patching7.ipynb", [SETUP]), "notebook7")


# The same model with its mixing split into two heads, each layer's heads
# passed through Module.perturb: a sweep over heads gives a row per head.
HEADS_SETUP = """
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import patching_sweep

class HeadLayer(nnx.Module):
    def __init__(self, rngs):
        self.mix = nnx.Linear(8, 8, rngs=rngs)

    def __call__(self, x):
        heads = self.mix(jnp.cumsum(x, axis=1) / 3).reshape(*x.shape[:2], 2, 4)
        heads = self.perturb("heads", heads)
        return x + nnx.gelu(heads.reshape(x.shape))

class HeadLM(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(5, 8, rngs=rngs)
        self.layers = nnx.List([HeadLayer(rngs) for _ in range(3)])
        self.unembed = nnx.Linear(8, 5, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.unembed(x)

lm = HeadLM(nnx.Rngs(0))
clean, corrupted = jnp.array([[1, 2, 3, 4, 0, 2]]), jnp.array([[3, 2, 3, 4, 0, 2]])
by_head = patching_sweep(lm, clean, corrupted, lambda logits: logits[0, -1, 1] - logits[0, -1, 3],
                         [f"layers.{i}.heads" for i in range(3)], positions=range(6), heads=2,
                         labels=["<s>", "the", "cat", "sat", "on", "mat"])
by_head
"""


def test_a_sweep_over_heads_groups_its_rows_by_site_in_both_themes(open_notebook):
    page = open_notebook("patching_heads.ipynb", [HEADS_SETUP])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    canvas = f"{HEAT}[data-method='exact']"
    assert page.get_attribute(canvas, "data-groups") == "3"
    # A cell of the second group's second head reads out its site and head.
    x, y = cell_point(page, "exact", 3, 2)
    page.mouse.move(x, y)
    tip = page.wait_for_selector(".jcnb-patching .jcnb-tooltip:not([hidden])", timeout=10_000)
    assert tip.text_content().split("\n")[:2] == ["layers.1.heads[head 1]", "position 2 (cat)"]
    pixels = {"light": page.eval_on_selector(canvas, "c => c.toDataURL()")}
    try:
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "patching_view_heads_light")
        set_theme(page, DARK)
        # The heatmap repaints with the theme's ink.
        page.wait_for_function(
            "([sel, prev]) => document.querySelector(sel).toDataURL() !== prev",
            arg=[canvas, pixels["light"]],
            timeout=30_000,
        )
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "patching_view_heads_dark")
    finally:
        set_theme(page, LIGHT)
