"""CaptureView in a real JupyterLab and Chromium.

Most checks share one notebook (a kernel start and a JAX compile cost tens of
seconds): the tests below run in order on one page, each from a state it sets.
"""

import re

import nbformat
import numpy as np
import pytest
from lab import THOUSAND_SITES, open_and_run
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

from jaxcapture_nb.stats import schema

SETUP = """
import jax, jax.numpy as jnp
from flax import nnx

class ConvWithOddValues(nnx.Module):
    def __init__(self, rngs):
        self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.head = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.conv(x))
        self.sow(nnx.Intermediate, "features", h)
        self.sow(nnx.Intermediate, "<img src=x onerror=window.__pwned=1>", h.mean())
        logits = self.head(h.reshape(x.shape[0], -1))
        self.sow(nnx.Intermediate, "log_logits", jnp.log(logits))
        self.sow(nnx.Intermediate, "masked_logits", jnp.where(jnp.arange(10) < 6, logits, -jnp.inf))
        self.sow(nnx.Intermediate, "all_nan", jnp.full((4, 6), jnp.nan))
        return logits

model = ConvWithOddValues(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (2, 8, 8, 1))
"""

MAGIC = """%%capture_intermediates model --methods
y = model(x)
"""

# A small transformer as published models write one: long module paths,
# 4-d activations, attention logits masked with a large finite constant,
# and values far from 1 either way.
TRANSFORMER = """
import jax, jax.numpy as jnp
from flax import nnx

MASK = -2.3819763e38

class SelfAttention(nnx.Module):
    def __init__(self, rngs):
        self.query_key_value = nnx.Linear(24, 72, rngs=rngs)
        self.output_projection = nnx.Linear(24, 24, rngs=rngs)

    def __call__(self, x):
        q, k, v = jnp.split(self.query_key_value(x).reshape(*x.shape[:2], 4, 18), 3, axis=-1)
        self.sow(nnx.Intermediate, "queries", q)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 6**0.5
        causal = jnp.tril(jnp.ones(logits.shape[-2:], bool))
        masked = jnp.where(causal, logits, MASK)
        self.sow(nnx.Intermediate, "masked_attention_logits", masked)
        out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(masked), v)
        return self.output_projection(out.reshape(x.shape))

class FeedForward(nnx.Module):
    def __init__(self, rngs):
        self.up_projection = nnx.Linear(24, 96, rngs=rngs)
        self.down_projection = nnx.Linear(96, 24, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.up_projection(x))
        self.sow(nnx.Intermediate, "update_to_weight_ratio", h * 1e-4)
        self.sow(nnx.Intermediate, "squared_activation_energy", (h * 1e3) ** 2)
        return self.down_projection(h)

class Block(nnx.Module):
    def __init__(self, rngs):
        self.self_attention = SelfAttention(rngs)
        self.feed_forward = FeedForward(rngs)

    def __call__(self, x):
        x = x + self.self_attention(x)
        return x + self.feed_forward(x)

class Transformer(nnx.Module):
    def __init__(self, rngs):
        self.embedding = nnx.Embed(64, 24, rngs=rngs)
        self.transformer_blocks = nnx.List([Block(rngs) for _ in range(2)])

    def __call__(self, tokens):
        x = self.embedding(tokens)
        for block in self.transformer_blocks:
            x = block(x)
        self.sow(nnx.Intermediate, "small_negative_shift", -jnp.abs(x) * 1e-3 - 8e-3)
        return self.embedding.attend(x)

model = Transformer(nnx.Rngs(0))
x = jax.random.randint(jax.random.key(1), (8, 24), 0, 64)
"""

HEAT_PIXELS = """c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let hash = 0;
    for (let i = 0; i < d.length; i++) hash = (hash * 31 + d[i]) >>> 0;
    return hash;
}"""


def open_capture_view(lab, browser, name: str, setup: str):
    """A page running ``setup`` and the magic on ``model`` in notebook ``name``, its CaptureView drawn."""
    url, token, root = lab
    cells = [setup, "%load_ext jaxcapture_nb", MAGIC]
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / name)
    page = open_and_run(browser, url, token, name)
    view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    view.scroll_into_view_if_needed()
    return page


@pytest.fixture(scope="module")
def net(lab, browser):
    """One page running SETUP (the ConvWithOddValues model), its CaptureView drawn."""
    page = open_capture_view(lab, browser, "capture_view.ipynb", SETUP)
    yield page
    page.close()


def row_of(page, label: str):
    """The body row of the site whose name cell starts with ``label``, scrolled into the table."""
    index = page.evaluate(
        """(label) => {
            const root = document.querySelector('.jcnb-root');
            const rows = [...root.querySelectorAll('.jcnb-body-row')];
            const row = rows.find((r) => r.children[1].firstChild.textContent === label);
            return row ? row.dataset.site : null;
        }""",
        label,
    )
    assert index is not None, label
    return f".jcnb-body-row[data-site='{index}']"


def select(page, label: str) -> None:
    """Clicks the row of ``label`` and waits for its details and heatmap answer."""
    page.click(row_of(page, label))
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]", timeout=60_000)


def test_rows_name_outputs_escape_names_and_hint_before_selection(net):
    page = net
    # Before any selection the details are a hint, not empty frames.
    assert page.is_visible(".jcnb-detail .jcnb-hint")
    assert "Select a row" in page.text_content(".jcnb-detail .jcnb-hint")
    assert not page.is_visible(".jcnb-detail-body")
    screenshot(page, "capture_view_hint")

    # Rows: sows and method outputs, grouped by module path in order of
    # first appearance; a call's output reads "(output)", the model's own
    # "model output", and says it equals the head's output.
    rows = page.eval_on_selector_all(
        ".jcnb-body-row", "rows => rows.map(r => [r.children[0].textContent, r.children[1].textContent])"
    )
    assert rows == [
        ["conv", "(output)"],
        ["(root)", "features"],
        ["(root)", "<img src=x onerror=window.__pwned=1>"],
        ["(root)", "log_logits"],
        ["(root)", "masked_logits"],
        ["(root)", "all_nan"],
        ["(root)", "model output = head (output)"],
        ["head", "(output)"],
    ]
    # The columns: the site's own, then each statistic the schema gives a
    # column, named as it names them; every head carries its key.
    heads = page.eval_on_selector_all(
        ".jcnb-head .jcnb-cell", "cells => cells.map(c => [c.dataset.key, c.textContent])"
    )
    stats = [[s.key, s.label] for s in schema.table_stats()]
    own = [[key, key] for key in ("path", "name", "call", "shape", "dtype")]
    assert heads == [*own, *stats, ["nonfinite", "NaN/Inf"], ["hist", "histogram"]]
    assert ["zero_pct", "zeros %"] in heads
    # The data colours are the schema's, set on the widget's root.
    series = page.eval_on_selector(".jcnb-root", "r => getComputedStyle(r).getPropertyValue('--jcnb-series')")
    assert series.strip() == schema.SERIES_COLOUR
    same = page.get_attribute(".jcnb-body-row [data-same-as]", "title")
    assert "recorded as __call__" in same and "same values as head (output)" in same
    assert "recorded as conv.__call__" in page.get_attribute(
        f"{row_of(page, '(output)')} .jcnb-name", "title"
    )
    assert page.evaluate("() => window.__pwned") is None
    assert page.query_selector(".jcnb-root img") is None

    # The first non-finite site is flagged at the top; clicking it selects it.
    flag = page.wait_for_selector(".jcnb-flag", state="visible")
    assert "log_logits" in flag.text_content()
    flag.click()
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
    assert not blank_canvas(page, "canvas.jcnb-hist")
    assert not page.is_visible(".jcnb-detail .jcnb-hint")
    assert "log_logits" in page.text_content(".jcnb-detail-title")


def test_histogram_shows_nonfinite_values_beside_it_with_axes_and_hover(net):
    page = net
    select(page, "masked_logits")
    # 8 of the 20 logits are -Inf: a bar of their own, a key with the count
    # (named as the schema names it), and statistics said to be over the
    # finite values only.
    assert page.get_attribute("canvas.jcnb-hist", "data-nonfinite") == "\u2212Inf:8"
    assert "8 \u2212Inf" in page.text_content(".jcnb-nonfinite-key")
    assert page.get_attribute(".jcnb-stats-line", "data-finite-only") == "true"
    assert "over the 12 finite values of 20" in page.text_content(".jcnb-stats-line")
    # The NaN/Inf cell says which kinds.
    assert page.get_attribute(f"{row_of(page, 'masked_logits')} .jcnb-nonfinite", "title") == (
        "0 NaN, 0 +Inf, 8 \u2212Inf"
    )
    # Hovering a bin reads out its range and count.
    page.hover("canvas.jcnb-hist", position={"x": 70, "y": 160})
    tip = page.wait_for_selector(".jcnb-root .jcnb-tooltip:not([hidden])")
    assert tip.text_content().startswith("[") and "values" in tip.text_content()
    width = page.eval_on_selector("canvas.jcnb-hist", "c => c.clientWidth")
    page.hover("canvas.jcnb-hist", position={"x": width - 30, "y": 160})
    page.wait_for_function(
        "() => document.querySelector('.jcnb-root .jcnb-tooltip').textContent.startsWith('\u2212Inf')"
    )
    # Log counts: the picture changes, the axis says so.
    before = page.eval_on_selector("canvas.jcnb-hist", HEAT_PIXELS)
    page.check(".jcnb-log input")
    page.wait_for_function(f"() => ({HEAT_PIXELS})(document.querySelector('canvas.jcnb-hist')) !== {before}")
    page.mouse.move(0, 0)
    page.eval_on_selector(".jcnb-detail", "d => d.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_nonfinite_histogram")
    page.uncheck(".jcnb-log input")


def test_an_all_nan_site_says_so_instead_of_a_histogram_or_scale(net):
    page = net
    select(page, "all_nan")
    assert page.is_visible(".jcnb-hist-box .jcnb-empty-values")
    assert page.text_content(".jcnb-hist-box .jcnb-empty-values") == "No histogram: all 24 values are NaN."
    assert not page.is_visible("canvas.jcnb-hist")
    assert page.text_content(".jcnb-heat-note") == "No heatmap: all 24 values are NaN."
    assert not page.is_visible(".jcnb-diverging")
    assert page.text_content(".jcnb-stats-line") == ""  # no nan statistics to read
    assert not page.is_visible("canvas.jcnb-colour-bar")
    assert page.get_attribute("canvas.jcnb-colour-bar", "data-drawn") is None
    page.eval_on_selector(".jcnb-detail", "d => d.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_all_nan")


def test_heatmap_controls_axes_colour_bar_diverging_and_spinner(net):
    page = net
    # The spinner shows while the kernel computes the slice, then goes.
    page.evaluate(
        """() => {
            window.__spinnerSeen = false;
            const status = document.querySelector('.jcnb-heat-status');
            new MutationObserver(() => {
                if (status.querySelector('.jcnb-spinner')) window.__spinnerSeen = true;
            }).observe(status, { childList: true });
        }"""
    )
    page.click(row_of(page, "features"))
    page.wait_for_selector(".jcnb-heat-status .jcnb-spinner", state="detached", timeout=60_000)
    assert page.evaluate("() => window.__spinnerSeen")
    page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]", timeout=60_000)
    assert not blank_canvas(page, "canvas.jcnb-heat")
    # The axes shown are named, with their sizes; a colour bar gives the range.
    assert page.text_content(".jcnb-heat-axes") == "rows: axis 2 (8) \u00b7 columns: axis 3 (4)"
    page.wait_for_selector("canvas.jcnb-colour-bar[data-drawn=true]")
    assert not blank_canvas(page, "canvas.jcnb-colour-bar")
    lo, hi = map(float, page.get_attribute("canvas.jcnb-colour-bar", "data-range").split())
    assert lo == 0 and hi > 0  # ReLU outputs: the scale starts at their zeros
    assert page.eval_on_selector_all(".jcnb-axis-input", "inputs => inputs.length") == 2

    # Enter applies an index; the slice changes without leaving the box.
    before = page.eval_on_selector("canvas.jcnb-heat", HEAT_PIXELS)
    box = page.locator(".jcnb-axis-input").nth(1)
    box.fill("5")
    box.press("Enter")
    page.wait_for_function(
        f"() => ({HEAT_PIXELS})(document.querySelector('canvas.jcnb-heat')) !== {before}", timeout=60_000
    )
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]")
    assert page.evaluate("() => document.activeElement.classList.contains('jcnb-axis-input')")

    # An index out of range is refused, with a message next to the box.
    after = page.eval_on_selector("canvas.jcnb-heat", HEAT_PIXELS)
    first = page.locator(".jcnb-axis-input").nth(0)
    first.fill("99")
    first.press("Enter")
    page.wait_for_selector(".jcnb-axis-input.jcnb-bad")
    assert page.text_content(".jcnb-index-message") == "axis 0: 99 is out of range: 0 to 1"
    assert page.get_attribute(".jcnb-root", "data-heatmap") == "ready"
    assert page.eval_on_selector("canvas.jcnb-heat", HEAT_PIXELS) == after
    page.eval_on_selector(".jcnb-heat-box", "d => d.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_index_refused")
    first.fill("1")
    first.press("Enter")
    page.wait_for_selector(".jcnb-axis-input.jcnb-bad", state="detached")
    assert page.text_content(".jcnb-index-message") == ""
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]", timeout=60_000)

    # Hovering the heatmap reads out the element's full index and its value.
    page.hover("canvas.jcnb-heat", position={"x": 2, "y": 2})
    page.wait_for_function(
        "() => document.querySelector('.jcnb-root .jcnb-tooltip').textContent.startsWith('[1, 5, 0, 0]')"
    )
    assert "value " in page.text_content(".jcnb-root .jcnb-tooltip")
    page.mouse.move(0, 0)

    # Diverging colours centred at zero: another picture, a symmetric range.
    sequential = page.eval_on_selector("canvas.jcnb-heat", HEAT_PIXELS)
    page.check(".jcnb-diverging input")
    page.wait_for_selector("canvas.jcnb-heat[data-map=diverging]", timeout=60_000)
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]")
    assert page.eval_on_selector("canvas.jcnb-heat", HEAT_PIXELS) != sequential
    lo, hi = map(float, page.get_attribute("canvas.jcnb-colour-bar", "data-range").split())
    assert lo == -hi and hi > 0
    page.eval_on_selector(".jcnb-heat-box", "d => d.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_diverging")
    page.uncheck(".jcnb-diverging input")
    page.wait_for_selector("canvas.jcnb-heat[data-map=sequential]", timeout=60_000)


def test_arrow_keys_move_through_rows_and_enter_opens_one(net):
    page = net
    page.fill(".jcnb-filter", "")
    page.click(row_of(page, "features"))
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]", timeout=60_000)
    assert page.evaluate("() => document.activeElement.classList.contains('jcnb-scroller')")
    features = page.get_attribute(".jcnb-root", "data-selected")
    active_cell = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    cell_before = page.evaluate(active_cell)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    cursor = page.get_attribute(".jcnb-root", "data-cursor")
    assert page.text_content(".jcnb-cursor .jcnb-name") == "log_logits"
    assert page.get_attribute(".jcnb-root", "data-selected") == features  # moving is not opening
    page.keyboard.press("ArrowUp")
    assert page.text_content(".jcnb-cursor .jcnb-name").startswith("<img")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector(f".jcnb-root[data-selected='{cursor}']")
    assert "log_logits" in page.text_content(".jcnb-detail-title")
    # JupyterLab did not take the keys: the notebook's active cell stays.
    assert page.evaluate(active_cell) == cell_before
    screenshot(page, "capture_view_keyboard")


def test_filtering_out_the_selected_row_clears_the_details(net):
    page = net
    select(page, "features")
    page.fill(".jcnb-filter", "^head")
    page.wait_for_selector(".jcnb-root[data-visible-rows='1']")
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") == 1
    page.wait_for_selector(".jcnb-detail .jcnb-hint", state="visible")
    assert page.get_attribute(".jcnb-root", "data-selected") is None
    assert not page.is_visible(".jcnb-detail-body")
    # Labels match as well as the recorded names.
    page.fill(".jcnb-filter", "model output")
    page.wait_for_selector(".jcnb-root[data-visible-rows='1']")
    # Text that is not a regular expression is matched as it is, and the box says so.
    page.fill(".jcnb-filter", "head(")
    page.wait_for_selector(".jcnb-root[data-visible-rows='0']")
    assert "plain text" in page.get_attribute(".jcnb-filter.jcnb-bad", "title")
    page.fill(".jcnb-filter", "")
    page.wait_for_selector(".jcnb-root[data-visible-rows='8']")
    # Sorting by mean puts the largest first; NaN means sort last.
    page.click(".jcnb-head span[data-key=mean]")
    first = page.eval_on_selector(".jcnb-body-row[style*='top: 24px']", "r => r.children[1].textContent")
    assert first not in ("log_logits", "all_nan")
    page.click(".jcnb-head span[data-key=path]")


@pytest.mark.parametrize("theme", [LIGHT, DARK])
def test_readable_in_light_and_dark(net, theme):
    page = net
    try:
        page.fill(".jcnb-filter", "")
        select(page, "masked_logits")
        page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]")
        before = page.eval_on_selector("canvas.jcnb-hist", HEAT_PIXELS)
        set_theme(page, theme)
        if theme == DARK:  # the canvases are drawn again in the theme's colours
            page.wait_for_function(
                f"() => ({HEAT_PIXELS})(document.querySelector('canvas.jcnb-hist')) !== {before}"
            )
        page.eval_on_selector(".jcnb-root", "r => r.scrollIntoView({block: 'start'})")
        assert low_contrast_text(page, ".jcnb-root") == []
        name = "light" if theme == LIGHT else "dark"
        screenshot(page, f"capture_view_{name}")
    finally:
        if theme != LIGHT:
            set_theme(page, LIGHT)


def test_at_900_px_the_table_scrolls_sideways_and_cut_cells_have_titles(net):
    page = net
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": 900, "height": 900})
        page.fill(".jcnb-filter", "")
        page.wait_for_selector(".jcnb-root[data-visible-rows='8']")
        # The notebook lays itself out again after the resize, on a busy machine a
        # while later: the table is measured once it fits the window.
        page.wait_for_function(
            "() => document.querySelector('.jcnb-scroller').getBoundingClientRect().right <= window.innerWidth"
        )
        widths = page.eval_on_selector(".jcnb-scroller", "s => [s.scrollWidth, s.clientWidth]")
        assert widths[0] > widths[1], widths
        # Every cell whose text is cut (or part of a path) carries all of it in its title.
        cut = page.eval_on_selector_all(
            ".jcnb-root .jcnb-cell, .jcnb-root .jcnb-path > span",
            """cells => cells.filter(c => c.scrollWidth > c.clientWidth)
                .map(c => [c.textContent, c.closest('.jcnb-cell').title])""",
        )
        assert cut, "nothing is cut at 900 px: the test checks nothing"
        assert all(title and text.split(" = ")[0] in title for text, title in cut), cut
        # A shape keeps every axis: the table scrolls rather than cut it.
        shapes_cut = page.eval_on_selector(
            ".jcnb-scroller",
            """s => {
                const k = [...s.querySelectorAll('.jcnb-head [data-key]')].findIndex(c => c.dataset.key === 'shape');
                return [...s.querySelectorAll('.jcnb-body-row')].map(r => r.children[k])
                    .filter(c => c.scrollWidth > c.clientWidth).map(c => c.textContent);
            }""",
        )
        assert not shapes_cut, shapes_cut
        # The histogram narrows to the output: its -Inf bar is in view.
        select(page, "masked_logits")
        fits = page.eval_on_selector(
            ".jcnb-detail",
            """d => d.querySelector('canvas.jcnb-hist').getBoundingClientRect().right
                <= d.getBoundingClientRect().right + 1""",
        )
        assert fits
        page.eval_on_selector(".jcnb-root", "r => r.scrollIntoView({block: 'start'})")
        screenshot(page, "capture_view_900px")
        # The last column can be scrolled into view.
        page.eval_on_selector(".jcnb-scroller", "s => { s.scrollLeft = s.scrollWidth; }")
        reachable = page.eval_on_selector(
            ".jcnb-scroller",
            """s => {
                const last = s.querySelector('.jcnb-head span[data-key=hist]').getBoundingClientRect();
                const box = s.getBoundingClientRect();
                return last.right <= box.right + 1 && last.left >= box.left;
            }""",
        )
        assert reachable
        # The path stays at the left edge and the name beside it while the
        # numbers scroll under them.
        path, name = page.eval_on_selector(
            ".jcnb-scroller",
            """s => {
                const row = s.querySelector('.jcnb-body-row');
                const left = s.getBoundingClientRect().left;
                return [row.children[0].getBoundingClientRect().left - left,
                        row.children[1].getBoundingClientRect().left - row.children[0].getBoundingClientRect().right];
            }""",
        )
        assert 0 <= path <= 2 and abs(name) <= 1, (path, name)
        screenshot(page, "capture_view_900px_scrolled")
    finally:
        page.eval_on_selector(".jcnb-scroller", "s => { s.scrollLeft = 0; }")
        page.set_viewport_size(size)


@pytest.fixture(scope="module")
def transformer(lab, browser):
    """One page running the TRANSFORMER notebook, its CaptureView drawn."""
    page = open_capture_view(lab, browser, "capture_transformer.ipynb", TRANSFORMER)
    yield page
    page.close()


# Every body row built, as [site, [[column key, text, title, cut?], ...]];
# a row without statistics gives only the columns before its note.
ROW_CELLS = """s => {
    const keys = [...s.querySelectorAll('.jcnb-head [data-key]')].map(c => c.dataset.key);
    return [...s.querySelectorAll('.jcnb-body-row')].map(r => [
        Number(r.dataset.site),
        [...r.children].filter(c => !c.classList.contains('jcnb-note')).map((c, k) =>
            [keys[k], c.textContent, c.title, [c, ...c.children].some(e => e.scrollWidth > e.clientWidth)]),
    ]);
}"""


def every_row(page) -> dict[int, list]:
    """The cells of every row of the table (ROW_CELLS), scrolling it down a screen at a time."""
    rows: dict[int, list] = {}
    total = int(page.get_attribute(".jcnb-root", "data-visible-rows"))
    for first in range(0, total, 12):
        page.eval_on_selector(".jcnb-scroller", f"s => {{ s.scrollTop = {first * 24}; }}")
        last = min(first + 12, total - 1)
        page.wait_for_selector(f".jcnb-body-row[aria-rowindex='{last + 2}']")
        rows.update(dict(page.eval_on_selector(".jcnb-scroller", ROW_CELLS)))
    page.eval_on_selector(".jcnb-scroller", "s => { s.scrollTop = 0; }")
    assert len(rows) == total
    return rows


# A compact number: 4 significant digits in fixed notation, or 3 in
# scientific notation without a "+".
COMPACT = re.compile(r"-?(\d+(\.\d+)?|\d(\.\d{1,2})?e-?\d+)")


@pytest.mark.parametrize("width", [1400, 900])
def test_numbers_fit_their_columns_and_give_their_full_value_on_hover(transformer, width):
    page = transformer
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_function(f"() => window.innerWidth === {width}")
        rows = every_row(page)
        numbers = {s.key: s.label for s in schema.table_stats() if s.format == "number"}
        counts = {"call", "nonfinite", *(s.key for s in schema.table_stats())}
        seen = set()
        for cells in rows.values():
            for key, text, title, cut in cells:
                if key in counts:
                    # No statistic is ever cut; hovering gives it in full.
                    assert not cut and title, (key, text, title)
                if key in numbers:
                    seen.add(key)
                    full = float(title.split("\n")[0].removeprefix(numbers[key] + " "))
                    assert COMPACT.fullmatch(text), (key, text)
                    assert len(text.replace("-", "").replace(".", "").split("e")[0].strip("0")) <= 4, text
                    assert "e" not in text if 1e-3 <= abs(full) < 1e5 else "e" in text, (text, full)
                    assert abs(float(text) - full) <= 5e-3 * abs(full), (text, full)
                elif cut:
                    # A path, name or shape cut short says all of itself on hover.
                    assert text.split(" = ")[0] in title, (key, text, title)
        assert seen == set(numbers)
        heads = page.eval_on_selector_all(
            ".jcnb-head .jcnb-cell",
            "cs => cs.filter(c => c.scrollWidth > c.clientWidth).map(c => c.textContent)",
        )
        assert heads == []

        by_name = {cells[1][1]: cells for cells in rows.values()}

        def stat(name: str, key: str) -> list:
            """[key, text, title, cut?] of the cell in column ``key`` of the row named ``name``."""
            return next(c for c in by_name[name] if c[0] == key)

        # The masked logits' row leaves the mask out of its statistics: its
        # minimum is the scores', the mask's value given in 8 characters in
        # the fill's column and in full in the minimum's title.
        masked_min = stat("masked_attention_logits", "min")
        assert -100 < float(masked_min[1]) < 0
        assert masked_min[2].endswith(f"; with it: {float(np.float32(-2.3819763e38))!r}")
        _, text, title, cut = stat("masked_attention_logits", "fill")
        assert (text, cut) == (f"\u22122.38e38 \u00d7 {8 * 4 * 276:,}", False)
        assert "excluded from the row's statistics and histogram" in title
        # Values near 1e-4 and 1e7 in scientific notation, near -0.008 in fixed.
        assert "e-" in stat("update_to_weight_ratio", "mean")[1]
        assert "e" in stat("squared_activation_energy", "max")[1]
        assert stat("small_negative_shift", "max")[1].startswith("-0.00")
        # The shapes of the attention's 4-d values, in full when there is room.
        if width == 1400:
            _, text, _, cut = stat("queries", "shape")
            assert (text, cut) == ("(8,24,4,6)", False)
            # A path is cut only where the name column has no room to spare.
            names = [cells[1][1] for cells in rows.values()]
            column, widest = page.eval_on_selector(
                ".jcnb-body-row",
                """(row, texts) => {
                    const cell = row.children[1];
                    const probe = cell.cloneNode();
                    probe.style.cssText = 'position:absolute;visibility:hidden;width:auto;max-width:none';
                    row.append(probe);
                    let widest = 0;
                    for (const text of texts) {
                        probe.textContent = text;
                        widest = Math.max(widest, probe.getBoundingClientRect().width);
                    }
                    probe.remove();
                    return [cell.getBoundingClientRect().width, widest];
                }""",
                names,
            )
            if any(cells[0][3] for cells in rows.values()):
                assert column - widest < 8, (column, widest)

        for theme in (LIGHT, DARK):
            set_theme(page, theme)
            page.eval_on_selector(".jcnb-root", "r => r.scrollIntoView({block: 'start'})")
            assert low_contrast_text(page, ".jcnb-scroller") == []
            screenshot(page, f"capture_view_transformer_{width}px_{'light' if theme == LIGHT else 'dark'}")
    finally:
        set_theme(page, LIGHT)
        page.set_viewport_size(size)


def test_at_900_px_the_path_stays_put_while_the_statistics_scroll_into_view(transformer):
    page = transformer
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": 900, "height": 1000})
        page.wait_for_function("() => window.innerWidth === 900")
        page.eval_on_selector(".jcnb-root", "r => r.scrollIntoView({block: 'start'})")
        widths = page.eval_on_selector(".jcnb-scroller", "s => [s.scrollWidth, s.clientWidth]")
        assert widths[0] > widths[1], widths
        lefts = """s => {
            const row = s.querySelector('.jcnb-body-row');
            const left = (c) => c.getBoundingClientRect().left;
            return { path: left(row.children[0]), name: left(row.children[1]),
                     mean: left(s.querySelector('.jcnb-head [data-key=mean]')) };
        }"""
        before = page.eval_on_selector(".jcnb-scroller", lefts)
        # Scrolled until the mean column meets the frozen name: every number
        # statistic is in view beside the path and name, which stay put.
        in_view = page.eval_on_selector(
            ".jcnb-scroller",
            """s => {
                const row = s.querySelector('.jcnb-body-row');
                const frozen = row.children[1].getBoundingClientRect().right;
                const mean = s.querySelector('.jcnb-head [data-key=mean]').getBoundingClientRect();
                s.scrollLeft += mean.left - frozen;
                const box = s.getBoundingClientRect();
                return ['mean', 'std', 'min', 'max'].map((key) => {
                    const cell = s.querySelector(`.jcnb-head [data-key=${key}]`).getBoundingClientRect();
                    return cell.left >= frozen - 1 && cell.right <= box.right + 1;
                });
            }""",
        )
        after = page.eval_on_selector(".jcnb-scroller", lefts)
        assert in_view == [True] * 4, in_view
        assert after["path"] == before["path"] and after["name"] == before["name"], (before, after)
        assert after["mean"] < before["mean"] - 50, (before, after)
        screenshot(page, "capture_view_transformer_900px_scrolled")
        # Scrolled to the end, the path is still where it was.
        page.eval_on_selector(".jcnb-scroller", "s => { s.scrollLeft = s.scrollWidth; }")
        assert page.eval_on_selector(".jcnb-scroller", lefts)["path"] == before["path"]
    finally:
        page.eval_on_selector(".jcnb-scroller", "s => { s.scrollLeft = 0; }")
        page.set_viewport_size(size)


def test_a_third_click_on_a_head_goes_back_to_execution_order(transformer):
    page = transformer
    shown = """s => [...s.querySelectorAll('.jcnb-body-row')]
        .sort((a, b) => a.getAttribute('aria-rowindex') - b.getAttribute('aria-rowindex'))
        .map(r => r.dataset.site)"""
    sorts = "s => [...s.querySelectorAll('.jcnb-head [aria-sort]')].map(c => [c.dataset.key, c.getAttribute('aria-sort')])"
    unsorted = page.eval_on_selector(".jcnb-scroller", shown)
    assert page.eval_on_selector(".jcnb-scroller", sorts) == []
    mean = ".jcnb-head span[data-key=mean]"
    means = []
    for expected in ("descending", "ascending"):
        page.click(mean)
        assert page.eval_on_selector(".jcnb-scroller", sorts) == [["mean", expected]]
        order = page.eval_on_selector(".jcnb-scroller", shown)
        assert order != unsorted
        means.append(order)
        page.eval_on_selector(".jcnb-root", "r => r.scrollIntoView({block: 'start'})")
        screenshot(page, f"capture_view_sorted_{expected}")
    assert means[0] != means[1]
    assert "back to execution order" in page.get_attribute(mean, "title")
    page.click(mean)
    assert page.eval_on_selector(".jcnb-scroller", sorts) == []
    assert page.eval_on_selector(".jcnb-scroller", shown) == unsorted
    # A text column starts A to Z, and comes back the same way.
    path = ".jcnb-head span[data-key=path]"
    for expected in ([["path", "ascending"]], [["path", "descending"]], []):
        page.click(path)
        assert page.eval_on_selector(".jcnb-scroller", sorts) == expected
    assert page.eval_on_selector(".jcnb-scroller", shown) == unsorted
    # The histogram's head does not sort.
    page.click(".jcnb-head span[data-key=hist]")
    assert page.eval_on_selector(".jcnb-scroller", sorts) == []


def test_a_thousand_sites_render_only_the_visible_rows(open_notebook):
    page = open_notebook("many.ipynb", [THOUSAND_SITES, "cap.show()"])
    page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    assert page.text_content(".jcnb-title") == "1000 sowed values"
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") <= 20
    page.eval_on_selector(".jcnb-scroller", "s => { s.scrollTop = s.scrollHeight; }")
    page.wait_for_selector(".jcnb-body-row:has(span:text-is('site0999'))")
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") <= 20
    page.click(".jcnb-body-row:has(span:text-is('site0999'))")
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
    assert page.eval_on_selector(".jcnb-root", "r => r.dataset.selected") == "999"
    screenshot(page, "capture_view_1000_sites")


def test_the_widget_works_in_notebook_7(open_notebook7):
    page = open_notebook7("notebook7.ipynb", [SETUP, "%load_ext jaxcapture_nb", MAGIC])
    view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    view.scroll_into_view_if_needed()
    assert len(page.query_selector_all(".jcnb-body-row")) == 8
    page.click(".jcnb-body-row:has-text('features')")
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
    assert not blank_canvas(page, "canvas.jcnb-hist")
    screenshot(page, "capture_view_notebook7")


ATTENTION = """
import jax, jax.numpy as jnp
from flax import nnx

class Attention(nnx.Module):
    def __init__(self, rngs):
        self.qk = nnx.Linear(8, 16, rngs=rngs)

    def __call__(self, x):
        q, k = jnp.split(self.qk(x), 2, axis=-1)
        logits = q @ k.T
        causal = jnp.tril(jnp.ones((x.shape[0], x.shape[0]), bool))
        logits = jnp.where(causal, logits, -2.3819763e38)
        self.sow(nnx.Intermediate, "masked_logits", logits)
        return None, jax.nn.softmax(logits) @ k

model = Attention(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (12, 8))
"""


def test_tuple_outputs_show_as_leaf_rows_and_masked_logits_draw_their_mask(open_notebook):
    page = open_notebook(
        "attention.ipynb",
        [ATTENTION, "%load_ext jaxcapture_nb", "%%capture_intermediates model --methods\ny = model(x)\n"],
    )
    view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    view.scroll_into_view_if_needed()
    names = page.eval_on_selector_all(".jcnb-body-row", "rows => rows.map(r => r.children[1].textContent)")
    assert names == ["(output)", "masked_logits", "model output[1]"]
    # Statistics near the float32 limit are finite, and no cell reads inf or nan.
    cells = page.eval_on_selector(
        ".jcnb-body-row:has(span:text-is('masked_logits'))", "r => [...r.children].map(c => c.textContent)"
    )
    assert not any(text in ("inf", "-inf", "nan") for text in cells)

    page.click(".jcnb-body-row:has(span:text-is('masked_logits'))")
    page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]", timeout=60_000)
    # The causal mask shows: the heatmap holds more than one colour.
    colours = page.eval_on_selector(
        "canvas.jcnb-heat",
        """c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const seen = new Set();
            for (let i = 0; i < d.length; i += 4) if (d[i + 3]) seen.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]);
            return seen.size;
        }""",
    )
    assert colours > 1
    page.eval_on_selector("canvas.jcnb-heat", "c => c.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_masked_logits")


# Statistics added in Python before the capture, each one entry of
# schema.STATS: one derived from the others, one computed on the device.
ABSMAX = """
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb.stats import schema
from jaxcapture_nb import capture

schema.STATS = (
    *schema.STATS,
    schema.Stat(
        "absmax", "largest |x|", "absmax", column=True,
        derive=lambda st: max(abs(st["min"]), abs(st["max"])),
    ),
    schema.Stat(
        "big_pct", "|x| > 1 %", "|x|>1%", "percent", column=True,
        reduce=lambda v: 100.0 * (jnp.abs(v) > 1),
    ),
)

class Tiny(nnx.Module):
    def __call__(self, x):
        self.sow(nnx.Intermediate, "h", x * 3.0)
        return x

tiny = Tiny()
with capture(tiny) as cap:
    tiny(jnp.linspace(-2.0, 1.0, 12))
cap.show()
"""


# A value and its gradient share a name: the rows differ by their type alone.
GRADS = """
from jaxcapture_nb import capture_grads

class Scaled(nnx.Module):
    def __init__(self):
        self.scale = nnx.Param(jnp.ones(4))

    def __call__(self, x):
        return jnp.sum(3.0 * self.perturb("conv2_out", self.scale * x))

capture_grads(lambda m, x: m(x), Scaled(), jnp.ones(4)).show()
"""


def test_a_statistic_added_in_python_is_a_column_with_its_label_and_value(open_notebook):
    page = open_notebook("capture_absmax.ipynb", [ABSMAX, GRADS])
    page.wait_for_selector(
        ".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000
    ).scroll_into_view_if_needed()
    page.wait_for_selector(".jcnb-body-row")
    head = page.eval_on_selector_all(".jcnb-head span[data-key]", "cs => cs.map(c => c.dataset.key)")
    stats = [s.key for s in schema.table_stats()]
    assert head[head.index("mean") : head.index("mean") + len(stats) + 2] == [*stats, "absmax", "big_pct"]
    assert page.text_content(".jcnb-head span[data-key=absmax]") == "largest |x|"
    assert page.text_content(".jcnb-head span[data-key=big_pct]") == "|x| > 1 %"
    cells = page.eval_on_selector(".jcnb-body-row", "r => [...r.children].map(c => c.textContent)")
    assert "6" in cells  # max(|-6|, |3|), written as the text table writes it
    assert "83.3" in cells  # 10 of the 12 values, reduced on the device
    screenshot(page, "capture_view_added_statistics")
    page.click(".jcnb-head span[data-key=absmax]")  # and it sorts
    assert page.get_attribute(".jcnb-root", "data-visible-rows") == "1"

    # A table of values and gradients has a type column telling the two rows apart.
    grads = page.locator(".jcnb-root").nth(1)
    grads.locator(".jcnb-body-row").first.wait_for()
    head = grads.locator(".jcnb-head span[data-key]").evaluate_all("cs => cs.map(c => c.dataset.key)")
    assert head[:5] == ["path", "name", "call", "type", "shape"]
    rows = grads.locator(".jcnb-body-row").evaluate_all(
        "rs => rs.map(r => [r.children[1].textContent, r.children[3].textContent])"
    )
    # In words, each gradient right after its value.
    assert rows == [["conv2_out", "activation"], ["conv2_out", "gradient"]], rows
    grads.scroll_into_view_if_needed()
    screenshot(page, "capture_grads_types")
    # One type only: no type column.
    assert "type" not in page.locator(".jcnb-root").first.locator(".jcnb-head span[data-key]").evaluate_all(
        "cs => cs.map(c => c.dataset.key)"
    )
