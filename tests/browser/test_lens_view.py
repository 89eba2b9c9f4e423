"""LogitLensView in a real JupyterLab, Notebook 7 and Chromium: the heatmap, its read-out, a clicked column, both themes."""

import csv
import pathlib

import pytest
from lab import run_in_kernel, wait_for_idle_kernel
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

# A 3-layer decoder with tied embeddings over 6 tokens, read at every layer.
SETUP = """
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import logit_lens

class Layer(nnx.Module):
    def __init__(self, rngs):
        self.mix = nnx.Linear(8, 8, rngs=rngs)

    def __call__(self, x):
        return x + nnx.gelu(self.mix(jnp.cumsum(x, axis=1) / 3))

class TinyLM(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(6, 8, rngs=rngs)
        self.layers = nnx.List([Layer(rngs) for _ in range(3)])
        self.norm = nnx.RMSNorm(8, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.embed.attend(self.norm(x))

words = ["<s>", "the", "cat", "sat", "on", "mat"]
lm = TinyLM(nnx.Rngs(0))
lens = logit_lens(lm, jnp.array([[0, 1, 2, 3, 4, 5]]), [f"layers.{i}.__call__" for i in range(3)],
                  top=3, labels=words, vocab=words)
lens
"""

ROOT = ".jcnb-ready .jcnb-lens"
HEAT = ".jcnb-lens canvas.jcnb-lens-heat[data-drawn='1']"


def cell_point(page, site: int, position: int) -> tuple[float, float]:
    box = page.locator(HEAT).bounding_box()
    d = page.eval_on_selector(HEAT, "c => c.dataset")
    return (
        box["x"] + float(d["left"]) + (position + 0.5) * float(d["cellW"]),
        box["y"] + float(d["top"]) + (site + 0.5) * float(d["cellH"]),
    )


def check_view(page, name: str) -> None:
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    assert not blank_canvas(page, HEAT)
    # Hovering a cell reads out its site, position, target and top tokens, as the kernel has them.
    page.mouse.move(*cell_point(page, 1, 2))
    tip = page.wait_for_selector(".jcnb-lens .jcnb-tooltip:not([hidden])", timeout=10_000)
    lines = tip.text_content().split("\n")
    expected = run_in_kernel(
        page,
        "print(lens.token_text(lens.target[2]), lens.rank[1, 2], lens.token_text(lens.top_tokens[1, 2, 0]))",
    ).split()
    assert lines[:2] == ["layers.1.__call__", "position 2 cat"], lines
    assert lines[2].startswith(f"target {expected[0]}: probability ") and lines[2].endswith(
        f"rank {expected[1]}"
    )
    assert lines[3].startswith(f"top: {expected[2]} (")
    # Clicking it lists the most probable tokens at that position, site by site, the output last.
    page.mouse.click(*cell_point(page, 1, 2))
    page.wait_for_selector(".jcnb-lens-top")
    sites = page.eval_on_selector_all(".jcnb-lens-top th", "ths => ths.map(t => t.textContent)")
    assert sites == ["layers.0.__call__", "layers.1.__call__", "layers.2.__call__", "output"]
    assert page.locator(".jcnb-lens-chosen th").text_content() == "layers.1.__call__"
    screenshot(page, f"lens_view_{name}")
    # The numbers download as CSV, as to_csv writes them.
    with page.expect_download() as download:
        page.click(".jcnb-lens-export-button[data-format=csv]")
    rows = list(csv.reader(pathlib.Path(download.value.path()).read_text().splitlines()))
    assert rows[0][:5] == ["site", "position", "target", "probability", "rank"] and len(rows) == 1 + 4 * 6
    kernel = list(csv.reader(run_in_kernel(page, "print(lens.to_csv(), end='')").strip().splitlines()))
    assert [float(r[3]) for r in rows[1:]] == pytest.approx([float(r[4]) for r in kernel[1:]], rel=1e-12)
    with page.expect_download() as download:
        page.click(".jcnb-lens-export-button[data-format=png]")
    picture = pathlib.Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename == "logit_lens.png" and picture[:8] == b"\x89PNG\r\n\x1a\n"


def test_lens_view_in_jupyterlab_light_and_dark(open_notebook):
    page = open_notebook("lens_view.ipynb", [SETUP])
    check_view(page, "lab")
    wait_for_idle_kernel(page)
    pixels = page.eval_on_selector(HEAT, "c => c.toDataURL()")
    try:
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "lens_view_light")
        set_theme(page, DARK)
        page.wait_for_function(
            "([sel, prev]) => document.querySelector(sel).toDataURL() !== prev",
            arg=[HEAT, pixels],
            timeout=30_000,
        )
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "lens_view_dark")
    finally:
        set_theme(page, LIGHT)


def test_lens_view_in_notebook_7(open_notebook7):
    check_view(open_notebook7("lens7.ipynb", [SETUP]), "notebook7")
