"""AttentionView in a real JupyterLab, Notebook 7 and Chromium: the small maps, a hovered cell, a clicked head, both themes."""

import pathlib

from lab import run_in_kernel, wait_for_idle_kernel
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

# A causal 2-layer decoder of 4 heads that sows its attention probabilities.
SETUP = """
import jax, jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import attention_patterns, capture

class SelfAttention(nnx.Module):
    def __init__(self, rngs):
        self.qkv = nnx.Linear(16, 48, rngs=rngs)

    def __call__(self, x):
        b, t, _ = x.shape
        q, k, v = jnp.split(self.qkv(x).reshape(b, t, 12, 4), 3, axis=2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)
        scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, jnp.finfo(scores.dtype).min)
        probs = jax.nn.softmax(scores, axis=-1)
        self.sow(nnx.Intermediate, "attention", probs)
        return x + jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, t, 16)

class Decoder(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(10, 16, rngs=rngs)
        self.layers = nnx.List([SelfAttention(rngs) for _ in range(2)])

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return x

words = ["<s>", "when", "mary", "and", "john", "went", "to", "the", "store", "john", "gave", "a"]
model = Decoder(nnx.Rngs(0))
with capture(model, keep="last") as cap:
    model(jnp.arange(12)[None] % 10)
patterns = attention_patterns(cap, tokens=words)
view = patterns.show()
view
"""

ROOT = ".jcnb-ready .jcnb-attention"
GRID = ".jcnb-attention canvas.jcnb-attention-grid[data-drawn='1']"
BIG = ".jcnb-attention canvas.jcnb-attention-enlarged[data-drawn='1']"


def small_cell(page, layer: int, head: int, q: int, k: int) -> tuple[float, float]:
    box = page.locator(GRID).bounding_box()
    d = page.eval_on_selector(GRID, "c => c.dataset")
    side, gap, n = float(d["side"]), float(d["gap"]), 12
    return (
        box["x"] + float(d["left"]) + layer * (side + gap) + (k + 0.5) * side / n,
        box["y"] + float(d["top"]) + head * (side + gap) + (q + 0.5) * side / n,
    )


def check_view(page, name: str) -> None:
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    assert not blank_canvas(page, GRID) and not blank_canvas(page, BIG)
    # Hovering a small map's cell reads out its query and key tokens and the kernel's weight.
    page.mouse.move(*small_cell(page, 1, 2, 9, 4))
    tip = page.wait_for_selector(".jcnb-attention .jcnb-tooltip:not([hidden])", timeout=10_000)
    lines = tip.text_content().split("\n")
    assert lines[:3] == ["layers.1.attention, head 2", "query 9 john", "key 4 john"], lines
    weight = float(run_in_kernel(page, "print(float(patterns.weights[1, 2, 9, 4]))"))
    assert abs(float(lines[3].split()[-1]) - weight) < 1e-3 * max(1.0, weight)
    # Clicking a head enlarges it, tokens on both axes; the kernel's view follows.
    page.mouse.click(*small_cell(page, 1, 2, 0, 0))
    page.wait_for_function(
        "() => document.querySelector('.jcnb-attention-enlarged-title')?.textContent.startsWith('layers.1.attention, head 2')"
    )
    cell = float(page.get_attribute(BIG, "data-cell"))
    assert cell >= 8
    screenshot(page, f"attention_view_{name}")
    with page.expect_download() as download:
        page.click(".jcnb-attention-export-button")
    assert pathlib.Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_attention_view_in_jupyterlab_light_and_dark(open_notebook):
    page = open_notebook("attention_view.ipynb", [SETUP])
    check_view(page, "lab")
    wait_for_idle_kernel(page)
    assert run_in_kernel(page, "print(view.selected)").strip() == "[1, 2]"
    pixels = page.eval_on_selector(GRID, "c => c.toDataURL()")
    try:
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "attention_view_light")
        set_theme(page, DARK)
        page.wait_for_function(
            "([sel, prev]) => document.querySelector(sel).toDataURL() !== prev",
            arg=[GRID, pixels],
            timeout=30_000,
        )
        assert low_contrast_text(page, ROOT) == []
        screenshot(page, "attention_view_dark")
    finally:
        set_theme(page, LIGHT)


def test_attention_view_in_notebook_7(open_notebook7):
    check_view(open_notebook7("attention7.ipynb", [SETUP]), "notebook7")
