"""LiveView's counts and its one-step detail, in a real JupyterLab and Chromium."""

from lab import wait_for_finished_watch
from page_checks import DARK, LIGHT, low_contrast_text, screenshot, set_theme
from test_live_view import hover_text

# Six sites of 32,768 values each: `all_nan` holds only NaNs from step 6 on,
# `mixed` holds 1,000 NaNs and 234 +Infs at every step. At 1400 px the cards
# are three a row: all_nan, layer0, layer1 / layer2, layer3, mixed.
COUNTS = """
import jax.numpy as jnp
from jaxcapture_nb import register_statistic, summarize, watch

# A compact statistic of the user's own: each card traces it too.
register_statistic("abs_mean", "|mean|", derive=lambda st: abs(st["mean"]), compact=True)
values = jnp.linspace(-1.0, 1.0, 32768)
mixed = values.at[:1000].set(jnp.nan).at[1000:1234].set(jnp.inf)
with watch(bins=16) as w:
    for step in range(10):
        tree = {f"layer{i}": summarize(values * (i + 1) * (step + 1), bins=16) for i in range(4)}
        tree["all_nan"] = summarize(values if step < 6 else jnp.full(32768, jnp.nan), bins=16)
        tree["mixed"] = summarize(mixed, bins=16)
        w.update(step, tree)
print("sites", [s.label for s in w.stream.series.values()])
"""

ROOT = ".jcnb-live"
DETAIL = ".jcnb-live-detail"


SITES = ["all_nan", "layer0", "layer1", "layer2", "layer3", "mixed"]


def card(label: str) -> str:
    return f".jcnb-live-card[data-site='{SITES.index(label)}']"


def trace_label(page, label: str, stat: str) -> str:
    return page.text_content(f"{card(label)} .jcnb-live-trace[data-stat={stat}] .jcnb-live-trace-label")


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_counts_are_exact_and_the_detail_opens_under_its_cards_row(open_notebook):
    page = open_notebook("live_counts.ipynb", [COUNTS])
    wait_for_finished_watch(page, timeout=180_000)
    page.wait_for_selector("text=/^sites /", timeout=60_000)
    page.wait_for_selector(f"{card('mixed')} canvas.jcnb-live-over[data-drawn='10']")
    order = page.eval_on_selector_all(".jcnb-live-card .jcnb-live-title", "ts => ts.map(t => t.textContent)")
    assert order == SITES, order

    # Each card traces the schema's compact statistics, a registered one
    # among them, then the NaN/Inf counts.
    traced = page.eval_on_selector_all(
        f"{card('layer1')} .jcnb-live-trace",
        "ts => ts.map(t => [t.dataset.stat, t.textContent.split(' ')[0]])",
    )
    assert traced == [
        ["mean", "mean"],
        ["std", "std"],
        ["zero_pct", "zeros"],
        ["abs_mean", "|mean|"],
        ["nonfinite", "NaN/Inf"],
    ]
    assert (
        page.eval_on_selector(
            f"{card('layer1')} .jcnb-live-trace[data-stat=abs_mean] canvas", "c => Number(c.dataset.drawn)"
        )
        == 10
    )

    # A card writes its NaN/Inf count exactly, as its read-out and the
    # detail do: 32768, not 32770 (four significant digits).
    assert trace_label(page, "all_nan", "nonfinite") == "NaN/Inf 32768"
    assert trace_label(page, "mixed", "nonfinite") == "NaN/Inf 1234"
    over = f"{card('all_nan')} canvas.jcnb-live-over"
    size = box(page, over)
    assert "32768 NaN" in hover_text(page, over, size["width"] - 12, size["height"] / 2)
    page.mouse.move(0, 0)

    # The detail opens under the row of the card clicked, after the row's
    # last card, across the grid, and scrolled into view; another card
    # moves it under its own row.
    columns = page.eval_on_selector(
        ".jcnb-live-grid", "g => getComputedStyle(g).gridTemplateColumns.split(' ').length"
    )
    assert columns >= 2
    for label in ("layer0", "all_nan", "mixed"):
        at = SITES.index(label)
        row_end = min((at // columns + 1) * columns, len(SITES)) - 1
        page.click(card(label))
        page.wait_for_selector(f"{DETAIL}[data-site='{at}']:not([hidden])")
        assert page.eval_on_selector(DETAIL, "d => d.previousElementSibling.dataset.site") == str(row_end)
        grid, detail, clicked = box(page, ".jcnb-live-grid"), box(page, DETAIL), box(page, card(label))
        assert abs(detail["x"] - grid["x"]) <= 2 and abs(detail["width"] - grid["width"]) <= 2, (detail, grid)
        assert clicked["y"] + clicked["height"] <= detail["y"]
        if row_end + 1 < len(SITES):
            assert box(page, card(SITES[row_end + 1]))["y"] >= detail["y"] + detail["height"]
        assert page.evaluate(
            "() => { const r = document.querySelector('.jcnb-live-detail').getBoundingClientRect();"
            " return r.top >= 0 && r.bottom <= window.innerHeight; }"
        )
        page.mouse.move(0, 0)

    # The NaN/Inf bars of the step are labelled with their exact counts, as
    # its statistics are.
    step = "canvas.jcnb-live-step"
    assert page.get_attribute(step, "data-nonfinite") == "NaN:1000 +Inf:234"
    numbers = dict(
        page.eval_on_selector_all(
            ".jcnb-live-numbers [data-key]", "cs => cs.map(c => [c.dataset.key, c.textContent])"
        )
    )
    assert numbers["nan"] == "NaN 1000" and numbers["posinf"] == "+Inf 234", numbers
    page.locator(DETAIL).scroll_into_view_if_needed()
    screenshot(page, "live_detail_mixed")

    # A step of only NaNs: no value axis, one bar of all 32768 values.
    page.click(card("all_nan"))
    page.wait_for_selector(f"{DETAIL}[data-site='0']")
    assert page.get_attribute(step, "data-nonfinite") == "NaN:32768"
    assert page.text_content(".jcnb-live-numbers [data-key=nan]") == "NaN 32768"
    # The one bar is the canvas's last 46 pixels: 30 of bar, then 16 of room.
    bar = hover_text(page, step, box(page, step)["width"] - 31, 120)
    assert bar.startswith("NaN") and "32768 values" in bar, bar
    page.mouse.move(0, 0)
    page.locator(DETAIL).scroll_into_view_if_needed()
    try:
        for theme, name in ((LIGHT, "live_detail_nan_light"), (DARK, "live_detail_nan_dark")):
            before = page.eval_on_selector(step, "c => c.toDataURL()")
            set_theme(page, theme)
            if theme == DARK:  # drawn again in the theme's colours
                page.wait_for_function(
                    "(before) => document.querySelector('canvas.jcnb-live-step').toDataURL() !== before",
                    arg=before,
                    timeout=30_000,
                )
            assert low_contrast_text(page, ROOT) == []
            page.locator(DETAIL).scroll_into_view_if_needed()
            screenshot(page, name)
    finally:
        set_theme(page, LIGHT)
