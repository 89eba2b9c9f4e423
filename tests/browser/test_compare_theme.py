"""CompareView in a real JupyterLab and Chromium: theme, contrast, axes and the hover read-out."""

import re

from page_checks import DARK, LIGHT, low_contrast_text, screenshot, set_theme

SETUP = """
import jax
from flax import nnx
from jaxcapture_nb import compare_modes

class LinearNormDropout(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.bn(self.linear(x)))

model = LinearNormDropout(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (64, 4))
compare_modes(model, x).show()
"""

ROOT = ".jcnb-compare.jcnb-ready"
DETAIL = ".jcnb-compare canvas.jcnb-cmp-large[data-drawn='1']"
# Texts that name a mode or sit under a mode's colour: the colour marks them
# with a swatch or an underline, the text itself keeps the theme's colour.
MODE_TEXTS = ".jcnb-cmp-mode, .jcnb-cmp-group, .jcnb-cmp-marked"


def mode_text_colours(page) -> list[list[str]]:
    """[text colour, theme text colour] of every mode label and mode column head."""
    return page.eval_on_selector_all(
        MODE_TEXTS,
        """els => els.map(e => [getComputedStyle(e).color,
                                getComputedStyle(e.closest('.jcnb-compare')).color])""",
    )


def hover_detail(page, fraction: float) -> str:
    """Moves the pointer over the detail histogram's plot and returns the tooltip's text."""
    box = page.locator(DETAIL).bounding_box()
    page.mouse.move(box["x"] + 1, box["y"] + 1)  # in the margin: no read-out there
    x, y = box["x"] + box["width"] * fraction, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    tip = page.wait_for_selector(".jcnb-compare .jcnb-tooltip:not([hidden])", timeout=10_000)
    # Next to the pointer, wherever JupyterLab's panels put the page.
    at = tip.bounding_box()
    near_x = abs(at["x"] - x - 14) < 4 or abs(at["x"] + at["width"] - x + 10) < 4
    near_y = abs(at["y"] - y - 14) < 4 or abs(at["y"] + at["height"] - y + 10) < 4
    assert near_x and near_y, (at, x, y)
    return tip.text_content()


def test_detail_histogram_has_axes_and_a_shared_tooltip_read_out(open_notebook):
    page = open_notebook("compare_axes.ipynb", [SETUP])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    page.click(".jcnb-compare [data-site='dropout.__call__']")
    page.wait_for_selector(DETAIL).scroll_into_view_if_needed()

    # Both axes carry round ticks, set by the drawing code as it draws them.
    x_ticks = [float(v) for v in page.get_attribute(DETAIL, "data-x-ticks").split()]
    assert len(x_ticks) >= 3 and x_ticks == sorted(x_ticks)
    y_ticks = page.get_attribute(DETAIL, "data-y-ticks").split()
    assert y_ticks[0] == "0%" and len(y_ticks) >= 2
    shares = [float(v.rstrip("%")) for v in y_ticks]
    assert shares == sorted(shares) and shares[-1] <= 100

    # The read-out of the bin under the pointer: its range, then every mode's count and share.
    lines = hover_detail(page, 0.5).split("\n")
    assert re.search(r"\[\S+, \S+\)$", lines[0]), lines
    assert [line.split(":")[0] for line in lines[1:]] == ["train", "eval"]
    assert all(re.fullmatch(r"\w+: \d+ \(\d+\.\d%\)", line) for line in lines[1:]), lines
    other = hover_detail(page, 0.1).split("\n")[0]
    assert other != lines[0]  # another bin, another range
    page.mouse.move(0, 0)
    page.wait_for_selector(".jcnb-compare .jcnb-tooltip", state="hidden")
    assert page.locator(".jcnb-cmp-tip").count() == 0  # no second read-out of its own


def test_compare_view_reads_well_in_light_and_dark(open_notebook):
    page = open_notebook("compare_theme.ipynb", [SETUP])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    assert "jcnb-themed" in page.get_attribute(".jcnb-compare", "class")
    page.click(".jcnb-compare [data-site='dropout.__call__']")
    page.wait_for_selector(DETAIL)
    pixels = {}
    try:
        for theme, name in ((LIGHT, "light"), (DARK, "dark")):
            set_theme(page, theme)
            page.locator(DETAIL).scroll_into_view_if_needed()
            # The canvas repaints with the theme's ink.
            page.wait_for_function(
                """([sel, prev]) => document.querySelector(sel).toDataURL() !== prev""",
                arg=[DETAIL, pixels.get("light", "")],
                timeout=30_000,
            )
            pixels[name] = page.eval_on_selector(DETAIL, "c => c.toDataURL()")
            colours = mode_text_colours(page)
            assert colours and all(text == theme_text for text, theme_text in colours), colours
            hover_detail(page, 0.5)  # the tooltip is checked and shown too
            assert low_contrast_text(page, ROOT) == [], name
            screenshot(page, f"compare_view_{name}")
            page.mouse.move(0, 0)
    finally:
        set_theme(page, LIGHT)
    assert pixels["light"] != pixels["dark"]


# A model whose call switches its mode, compared with its mode argument fixed: nothing shifts.
CALL_SWITCHED = """
class Switched(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x, training: bool = False):
        return self.dropout(self.linear(x), deterministic=not training)

switched = compare_modes(Switched(nnx.Rngs(0)), x, training=False)
switched.show()
"""


def test_the_note_on_the_call_argument_shows_over_the_table_in_light_and_dark(open_notebook):
    page = open_notebook("compare_call_note.ipynb", [SETUP, CALL_SWITCHED])
    # The second cell's view: the first has no note.
    note = ".jcnb-compare.jcnb-ready .jcnb-cmp-call-note:not([hidden])"
    page.wait_for_selector(note, timeout=180_000).scroll_into_view_if_needed()
    assert page.locator(note).count() == 1
    text = page.text_content(note)
    assert text.startswith("every site is the same in all modes: Switched switches modes with its call")
    assert text.endswith("modes={'train': {'training': True}, 'eval': {'training': False}}")
    # Over the table, under the line on the shift.
    top = page.eval_on_selector(
        note, "e => [e.previousElementSibling.className, e.nextElementSibling.className]"
    )
    assert top == ["jcnb-cmp-note", "jcnb-cmp-table"]
    root = ".jcnb-compare.jcnb-ready:has(> .jcnb-cmp-call-note:not([hidden]))"
    assert page.eval_on_selector(root, "e => e.querySelectorAll('.jcnb-cmp-same').length") == 3
    try:
        for theme, name in ((LIGHT, "light"), (DARK, "dark")):
            set_theme(page, theme)
            assert low_contrast_text(page, root) == [], name
            screenshot(page, f"compare_view_call_note_{name}")
    finally:
        set_theme(page, LIGHT)
