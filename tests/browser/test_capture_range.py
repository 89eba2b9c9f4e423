"""CaptureView's value range in a real JupyterLab and Chromium: masked attention logits.

One notebook, four views: a capture that kept the values, one under
keep="summary", one of a diverged layer, and one of logits masked with
-1e9 beside their unmasked scores. The tests run in order on one page, each
from a state it sets.
"""

import nbformat
import numpy as np
import pytest
from lab import open_and_run
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

# Attention logits masked as published models mask them: 0.7 of float32's
# most negative value above the diagonal.
SETUP = """
import jax, jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import capture

def masked_logits(q, k, mask_value=jnp.finfo(jnp.float32).min * 0.7):
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 4.0
    causal = jnp.tril(jnp.ones(logits.shape[-2:], bool))
    return jnp.where(causal, logits, mask_value)

class Attention(nnx.Module):
    def __init__(self, rngs):
        self.query_key = nnx.Linear(32, 2 * 8 * 16, rngs=rngs)

    def __call__(self, x):
        q, k = jnp.split(self.query_key(x).reshape(*x.shape[:2], 16, 16), 2, axis=2)
        logits = masked_logits(q, k)
        self.sow(nnx.Intermediate, "masked_logits", logits)
        return jax.nn.softmax(logits)

model = Attention(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (2, 24, 32))
"""

KEPT = """
with capture(model) as cap:
    model(x)
cap.show()
"""

SUMMARY = """
with capture(model, keep="summary") as summary_only:
    model(x)
summary_only.show()
"""

# A diverging layer: all but one of its 32,768 values NaN.
DIVERGED = """
class Diverged(nnx.Module):
    def __call__(self, x):
        self.sow(nnx.Intermediate, "diverged", jnp.full((8, 4096), jnp.nan).at[0, 0].set(1.0))
        return x

diverged = Diverged()
with capture(diverged) as nan_capture:
    diverged(x)
nan_capture.show()
"""

# The same attention, its logits masked with -1e9 as GPT-OSS masks them
# (an additive mask far from the scores, nowhere near float32's limit).
ADDITIVE = """
class AdditiveMask(Attention):
    def __call__(self, x):
        q, k = jnp.split(self.query_key(x).reshape(*x.shape[:2], 16, 16), 2, axis=2)
        self.sow(nnx.Intermediate, "scores", jnp.einsum("bqhd,bkhd->bhqk", q, k) / 4.0)
        logits = masked_logits(q, k, -1e9)
        self.sow(nnx.Intermediate, "gpt_logits", logits)
        return jax.nn.softmax(logits)

additive = AdditiveMask(nnx.Rngs(0))
with capture(additive) as additive_capture:
    additive(x)
additive_capture.show()
"""

MAIN = ":nth-match(.jcnb-root, 1)"
SUMMARY_VIEW = ":nth-match(.jcnb-root, 2)"
DIVERGED_VIEW = ":nth-match(.jcnb-root, 3)"
ADDITIVE_VIEW = ":nth-match(.jcnb-root, 4)"
MASKED_PER_SLICE = 24 * 23 // 2
FILL_COLOUR = [150, 150, 150]

# Each canvas pixel of the heatmap as [r, g, b].
PIXELS = """c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const out = [];
    for (let i = 0; i < d.length; i += 4) out.push([d[i], d[i + 1], d[i + 2]]);
    return out;
}"""


@pytest.fixture(scope="module")
def scores():
    """The unmasked logits, as the notebook's kernel computes them."""
    namespace = {}
    exec(SETUP, namespace)
    model, x = namespace["model"], namespace["x"]
    q, k = np.split(np.asarray(model.query_key(x)).reshape(2, 24, 16, 16), 2, axis=2)
    logits = np.asarray(namespace["masked_logits"](q, k))
    return logits[np.broadcast_to(np.tril(np.ones((24, 24), bool)), logits.shape)]


@pytest.fixture(scope="module")
def page(lab, browser):
    """One page running the notebook, both views drawn."""
    url, token, root = lab
    cells = [SETUP, KEPT, SUMMARY, DIVERGED, ADDITIVE]
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / "capture_range.ipynb")
    page = open_and_run(browser, url, token, "capture_range.ipynb")
    page.wait_for_selector(":nth-match(.jcnb-ready .jcnb-root[data-ready=true], 4)", timeout=180_000)
    page.eval_on_selector(MAIN, "r => r.scrollIntoView({block: 'start'})")
    yield page
    page.close()


def select_masked_logits(page, view: str = MAIN) -> None:
    """Selects the masked logits' row of ``view`` and waits for the kernel's answer."""
    page.click(f"{view} .jcnb-body-row:has(span:text-is('masked_logits'))")
    page.wait_for_selector(f"{view}[data-heatmap=ready]", timeout=60_000)
    page.wait_for_selector(f"{view} .jcnb-range-bar[data-mode]", timeout=60_000)


def drawn_range(page, selector: str) -> tuple[float, float]:
    return tuple(map(float, page.get_attribute(selector, "data-range").split()))


def marks(page) -> dict[str, int]:
    text = page.get_attribute(f"{MAIN} .jcnb-heat-figure", "data-marks")
    return {name: int(n) for name, n in (part.split(":") for part in text.split())}


def change_range(page, mode: str) -> None:
    page.select_option(f"{MAIN} .jcnb-range-mode select", mode)
    page.wait_for_selector(f"{MAIN} .jcnb-range-bar[data-mode={mode}]", timeout=60_000)
    page.wait_for_selector(f"{MAIN}[data-heatmap=ready]", timeout=60_000)


def check_both_themes(page, name: str, part: str, canvas: str) -> None:
    """Screenshots ``part`` in the light and the dark theme, its text readable in both, and goes back to light."""
    screenshot(page, f"{name}_light")
    assert low_contrast_text(page, part) == []
    try:
        set_theme(page, DARK)
        page.wait_for_selector(f"{canvas}[data-drawn=true]")
        screenshot(page, f"{name}_dark")
        assert low_contrast_text(page, part) == []
    finally:
        set_theme(page, LIGHT)


def test_masked_logits_start_without_the_fill_which_is_named(page, scores):
    select_masked_logits(page)
    bar = f"{MAIN} .jcnb-range-bar"
    assert page.get_attribute(bar, "data-mode") == "fill"
    count = 2 * 8 * MASKED_PER_SLICE
    assert page.text_content(f"{bar} .jcnb-fill-note") == f"fill \u22122.382e+38 \u00d7 {count:,} excluded"
    options = page.eval_on_selector_all(f"{bar} select option", "os => os.map(o => o.value)")
    assert options == ["full", "fill", "robust"]
    # The histogram spans the real scores, not the mask; the fill has its own bar.
    hist = f"{MAIN} canvas.jcnb-hist"
    assert page.get_attribute(hist, "data-mode") == "fill"
    lo, hi = drawn_range(page, hist)
    np.testing.assert_allclose([lo, hi], [scores.min(), scores.max()], rtol=1e-6)
    assert "fill \u22122.382e+38" in page.text_content(f"{MAIN} .jcnb-nonfinite-key")
    # The heatmap: the triangle in many colours, the masked cells in the fill's.
    lo, hi = drawn_range(page, f"{MAIN} canvas.jcnb-colour-bar")
    assert scores.min() <= lo < hi <= scores.max()
    assert marks(page)["fill"] == MASKED_PER_SLICE
    pixels = np.array(page.eval_on_selector(f"{MAIN} canvas.jcnb-heat", PIXELS)).reshape(24, 24, 3)
    lower = np.tril(np.ones((24, 24), bool))
    assert (pixels[~lower] == FILL_COLOUR).all()
    assert len({tuple(p) for p in pixels[lower]}) > 50
    assert "fill \u22122.382e+38 (left out of the colours)" in page.text_content(f"{MAIN} .jcnb-heat-key")
    # Index ticks on both axes.
    for ticks in page.query_selector_all(f"{MAIN} canvas.jcnb-heat-ticks"):
        assert ticks.get_attribute("data-drawn") == "true"
    assert not blank_canvas(page, f"{MAIN} canvas.jcnb-heat-ticks")
    # Hovering a masked cell says it is the fill.
    page.hover(f"{MAIN} canvas.jcnb-heat", position={"x": 230, "y": 4})
    page.wait_for_function(
        "() => document.querySelector('.jcnb-root .jcnb-tooltip').textContent.includes('the fill')"
    )
    page.mouse.move(0, 0)
    page.eval_on_selector(f"{MAIN} .jcnb-detail", "d => d.scrollIntoView({block: 'start'})")
    check_both_themes(page, "capture_range_fill", f"{MAIN} .jcnb-detail", f"{MAIN} canvas.jcnb-heat")


def test_statistics_leave_the_fill_out_as_the_row_does_and_include_it_on_request(page, scores):
    select_masked_logits(page)
    line = f"{MAIN} .jcnb-stats-line"
    assert page.get_attribute(line, "data-without-fill") == "true"
    text = page.text_content(line)
    assert f"over the {scores.size:,} values of {2 * 8 * 24 * 24:,} without the fill" in text
    assert f"max {float(scores.max()):.4g}" in text
    page.uncheck(f"{MAIN} .jcnb-rest-stats input")
    page.wait_for_selector(f"{line}:not([data-without-fill])")
    text = page.text_content(line)
    assert "min -2.382e+38" in text
    assert f"the fill \u22122.382e+38 \u00d7 {2 * 8 * MASKED_PER_SLICE:,} among them" in text
    page.check(f"{MAIN} .jcnb-rest-stats input")
    page.wait_for_selector(f"{line}[data-without-fill=true]")


def test_a_robust_range_counts_and_marks_the_values_beyond_it(page, scores):
    select_masked_logits(page)
    change_range(page, "robust")
    hist = f"{MAIN} canvas.jcnb-hist"
    lo, hi = drawn_range(page, hist)
    np.testing.assert_allclose([lo, hi], np.percentile(scores, [0.5, 99.5]), rtol=1e-5)
    under, over = int(page.get_attribute(hist, "data-under")), int(page.get_attribute(hist, "data-over"))
    assert under > 0 and over > 0
    key = page.text_content(f"{MAIN} .jcnb-nonfinite-key")
    assert f"{under} below" in key and f"{over} above" in key
    assert drawn_range(page, f"{MAIN} canvas.jcnb-colour-bar") == (lo, hi)
    seen = marks(page)
    assert seen["fill"] == MASKED_PER_SLICE and seen["under"] + seen["over"] > 0
    page.eval_on_selector(f"{MAIN} .jcnb-detail", "d => d.scrollIntoView({block: 'start'})")
    screenshot(page, "capture_range_robust")
    # The full range is today's picture: the mask against everything else.
    change_range(page, "full")
    lo, hi = drawn_range(page, hist)
    assert lo < -1e38 and hi == pytest.approx(float(scores.max()), rel=1e-6)
    assert marks(page)["fill"] == 0
    assert "excluded" not in page.text_content(f"{MAIN} .jcnb-fill-note")


def test_small_multiples_draw_one_heatmap_per_head(page):
    select_masked_logits(page)
    page.select_option(f"{MAIN} .jcnb-facet-axis", "1")
    facets = f"{MAIN} .jcnb-facets[data-count='8']"
    page.wait_for_selector(facets, timeout=60_000)
    page.wait_for_selector(f"{MAIN}[data-heatmap=ready]", timeout=60_000)
    labels = page.eval_on_selector_all(f"{MAIN} .jcnb-facet-label", "ls => ls.map(l => l.textContent)")
    # Each names its slice as an index, between the first and last row and column.
    assert labels == [f"[0, {k}, :, :]" for k in range(8)]
    ticks = page.eval_on_selector(
        f"{MAIN} .jcnb-facet",
        "f => [...f.querySelectorAll('.jcnb-facet-rows span, .jcnb-facet-cols span')].map(s => s.textContent)",
    )
    assert ticks == ["0", "23", "0", "23"], ticks  # 24 query by 24 key positions
    assert page.get_attribute(facets, "data-left-out") == "0"
    assert not page.is_visible(f"{MAIN} canvas.jcnb-heat")
    for k in range(8):
        assert not blank_canvas(page, f"{MAIN} canvas.jcnb-facet-heat[data-facet='{k}']")
    # One colour scale for all, and the mask in each.
    assert marks(page)["fill"] == 8 * MASKED_PER_SLICE
    assert "small multiples: axis 1, all 8" in page.text_content(f"{MAIN} .jcnb-heat-axes")
    # The head's index box has nothing to pick; the batch's still picks.
    disabled = page.eval_on_selector_all(f"{MAIN} .jcnb-axis-input", "is => is.map(i => i.disabled)")
    assert disabled == [False, True]
    # Hovering a small multiple reads out its element's full index.
    page.hover(f"{MAIN} canvas.jcnb-facet-heat[data-facet='3']", position={"x": 2, "y": 2})
    page.wait_for_function(
        "() => document.querySelector('.jcnb-root .jcnb-tooltip').textContent.startsWith('[0, 3, 0, 0]')"
    )
    page.mouse.move(0, 0)
    page.eval_on_selector(f"{MAIN} .jcnb-heat-box", "d => d.scrollIntoView({block: 'center'})")
    check_both_themes(
        page, "capture_range_facets", f"{MAIN} .jcnb-heat-box", f"{MAIN} canvas.jcnb-facet-heat"
    )
    page.select_option(f"{MAIN} .jcnb-facet-axis", "-1")
    page.wait_for_selector(f"{MAIN} canvas.jcnb-heat[data-drawn=true]", timeout=60_000)


def test_keep_summary_says_why_the_range_cannot_change(page):
    page.eval_on_selector(SUMMARY_VIEW, "r => r.scrollIntoView({block: 'start'})")
    select_masked_logits(page, SUMMARY_VIEW)
    bar = f"{SUMMARY_VIEW} .jcnb-range-bar"
    assert page.get_attribute(bar, "data-mode") == "full"
    assert page.eval_on_selector(f"{bar} select", "s => s.disabled")
    note = page.text_content(f"{bar} .jcnb-range-note")
    assert "keep='summary' kept no values" in note and "may be a fill value" in note
    page.eval_on_selector(f"{SUMMARY_VIEW} .jcnb-detail", "d => d.scrollIntoView({block: 'start'})")
    screenshot(page, "capture_range_summary")


def test_counts_of_nonfinite_values_are_written_exactly(page):
    page.click(f"{DIVERGED_VIEW} .jcnb-body-row:has(span:text-is('diverged'))")
    hist = f"{DIVERGED_VIEW} canvas.jcnb-hist[data-nonfinite]"
    page.wait_for_selector(hist, timeout=60_000)
    assert page.get_attribute(hist, "data-nonfinite") == "NaN:32767"
    # The bar's label, not a tick rounded to four digits (32770).
    assert page.get_attribute(hist, "data-nonfinite-labels") == "32767"


# Each column of a canvas: whether any of its pixels is painted.
PAINTED_COLUMNS = """c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const painted = new Array(c.width).fill(false);
    for (let i = 3; i < d.length; i += 4) if (d[i]) painted[((i - 3) / 4) % c.width] = true;
    return painted;
}"""


def row_cells(page, view: str, name: str) -> dict[str, tuple[str, str]]:
    """The text and title of each cell of ``name``'s row, by its column's head."""
    heads = page.eval_on_selector_all(f"{view} .jcnb-head .jcnb-cell", "cs => cs.map(c => c.textContent)")
    cells = page.eval_on_selector_all(
        f"{view} .jcnb-body-row:has(span:text-is('{name}')) > .jcnb-cell",
        "cs => cs.map(c => [c.textContent, c.title])",
    )
    return dict(zip(heads, map(tuple, cells), strict=True))


def test_a_row_of_logits_masked_with_minus_1e9_leaves_the_fill_out_and_says_so(page, scores):
    view = ADDITIVE_VIEW
    page.eval_on_selector(view, "r => r.scrollIntoView({block: 'start'})")
    count = 2 * 8 * MASKED_PER_SLICE
    row = f"{view} .jcnb-body-row:has(span:text-is('gpt_logits'))"
    assert page.get_attribute(row, "data-fill") == f"-1000000000:{count}"
    cells = row_cells(page, view, "gpt_logits")
    # Its statistics are the scores', the fill named in their titles with the values it gives.
    text, title = cells["min"]
    assert float(title.split()[1]) == float(scores.min())
    assert title.endswith(f"\nwithout the fill \u22121.000e+9 \u00d7 {count:,}; with it: -1000000000")
    assert float(cells["max"][1].split()[1]) == float(scores.max())
    np.testing.assert_allclose(float(cells["mean"][1].split()[1]), scores.mean(), rtol=1e-5, atol=1e-6)
    assert cells["fill excluded"][0] == f"\u22121e9 \u00d7 {count:,}"
    assert "excluded from the row's statistics and histogram" in cells["fill excluded"][1]
    assert "without the fill" in cells["histogram"][1]
    # Its sparkline spreads over the scores' bins, not a bar at each end.
    spark = f"{row} canvas.jcnb-spark"
    width = page.eval_on_selector(spark, "c => c.width")
    assert sum(page.eval_on_selector(spark, PAINTED_COLUMNS)) > 0.6 * width
    # The unmasked scores keep their row, with nothing in the fill's column.
    plain = row_cells(page, view, "scores")
    assert plain["fill excluded"] == ("", "no fill")
    assert float(plain["min"][1].split()[1]) < float(scores.min())
    # The details agree with the row: the same statistics, the histogram without the fill.
    page.click(row)
    page.wait_for_selector(f"{view}[data-heatmap=ready]", timeout=60_000)
    page.wait_for_selector(f"{view} .jcnb-range-bar[data-mode=fill]", timeout=60_000)
    assert page.text_content(f"{view} .jcnb-fill-note") == f"fill \u22121.000e+9 \u00d7 {count:,} excluded"
    line = page.text_content(f"{view} .jcnb-stats-line")
    assert f"min {float(scores.min()):.4g}" in line and f"over the {scores.size:,} values" in line
    lo, hi = drawn_range(page, f"{view} canvas.jcnb-hist")
    np.testing.assert_allclose([lo, hi], [scores.min(), scores.max()], rtol=1e-6)
    page.eval_on_selector(view, "r => r.scrollIntoView({block: 'start'})")
    check_both_themes(page, "capture_range_additive", view, f"{view} canvas.jcnb-hist")
