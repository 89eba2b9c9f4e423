"""Every widget in a marimo app (``marimo run`` of marimo_widgets.py) and Chromium.

marimo draws each ``mo.ui.anywidget`` inside an open shadow root, which
Playwright's selectors pierce and ``document.querySelector`` does not: the
checks below use selectors only. The tests share one page (its session runs
every cell once) and run in order: the first watches the training loop,
which runs until that test creates the stop file.
"""

import os
import pathlib
import re

import anywidget
import pytest
from lab import CHROMIUM, marimo_app
from page_checks import blank_canvas, low_contrast_text, screenshot

import jaxcapture_nb

NOTEBOOK = pathlib.Path(__file__).with_name("marimo_widgets.py")

CAPTURE = ".jcnb-root[data-ready=true]"
# The CompareView of its own cell, not the comparison the panel draws.
COMPARE = "div.jcnb-compare.jcnb-ready:not(.jcnb-modes .jcnb-compare)"
LIVE = ".jcnb-live[data-ready=true]"
PANEL = ".jcnb-modes[data-ready=true]"
PATCHING = ".jcnb-ready .jcnb-patching"
LENS = ".jcnb-ready .jcnb-lens"
ATTENTION = ".jcnb-ready .jcnb-attention"


@pytest.fixture(scope="module")
def marimo(tmp_path_factory):
    """A ``marimo run`` server of marimo_widgets.py; yields (url, the stop file of its training loop)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    workdir = tmp_path_factory.mktemp("marimo")
    stop = workdir / "stop-training"
    with marimo_app(NOTEBOOK, workdir, env={"JCNB_STOP_TRAINING": str(stop)}) as url:
        yield url, stop


@pytest.fixture(scope="module")
def app_page(marimo, browser):
    """One page of the app: its session runs every cell; the training loop runs until stopped."""
    url, stop = marimo
    page = browser.new_page()
    page.goto(url)
    yield page
    stop.touch()  # a test run that skipped the loop's test still ends the loop
    page.close()


@pytest.fixture(scope="module")
def idle_page(marimo, app_page):
    """The app's page once its last cell has run.

    A marimo kernel runs one thing at a time: until the training loop ends,
    what the browser sends the widgets waits.
    """
    marimo[1].touch()
    app_page.wait_for_selector("text=/live steps trained: \\d+/", timeout=180_000)
    return app_page


def live_count(page, attribute: str) -> int:
    """A LiveView count: ``data-seen`` (steps the loop ran) or ``data-steps`` (rows kept)."""
    return int(page.get_attribute(LIVE, f"data-{attribute}"))


def test_live_view_advances_while_the_loop_runs(marimo, app_page):
    page, (_, stop) = app_page, marimo
    # Running, with steps already shown, and then more: the view moves before the cell ends.
    page.wait_for_selector(f"{LIVE}[data-done=false]:not([data-seen='0'])", timeout=180_000)
    running = live_count(page, "seen")
    page.wait_for_selector(f"{LIVE}[data-done=false]:not([data-seen='{running}'])", timeout=60_000)
    assert live_count(page, "seen") > running
    page.locator(LIVE).scroll_into_view_if_needed()
    screenshot(page, "marimo_live_view_running")

    stop.touch()
    page.wait_for_selector(f"{LIVE}[data-done=true]", timeout=60_000)
    # The cell after the loop shows what the kernel counted; the view shows the same.
    summary = page.wait_for_selector("text=/live steps trained: \\d+, recorded: \\d+/", timeout=60_000)
    trained, recorded = map(int, re.findall(r"\d+", summary.text_content()))
    assert trained > running
    assert (live_count(page, "seen"), live_count(page, "steps")) == (trained, recorded)
    assert not blank_canvas(page, ".jcnb-live-card canvas.jcnb-live-over")
    page.locator(LIVE).scroll_into_view_if_needed()
    screenshot(page, "marimo_live_view_done")


def test_capture_view_draws_the_histogram_and_heatmap_of_a_clicked_row(idle_page):
    page = idle_page
    page.wait_for_selector(CAPTURE, timeout=180_000).scroll_into_view_if_needed()
    names = page.eval_on_selector_all(".jcnb-body-row", "rows => rows.map(r => r.children[1].textContent)")
    assert names == ["hidden"]
    page.click(".jcnb-body-row[data-site='0']")
    # The heatmap's values come from the kernel in a message and its answer.
    page.wait_for_selector(".jcnb-root[data-heatmap=ready]", timeout=60_000)
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]", timeout=30_000)
    page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]", timeout=30_000)
    assert not blank_canvas(page, "canvas.jcnb-hist")
    assert not blank_canvas(page, "canvas.jcnb-heat")
    page.locator(CAPTURE).scroll_into_view_if_needed()
    screenshot(page, "marimo_capture_view")


def test_compare_view_shows_the_comparison(idle_page):
    page = idle_page
    page.wait_for_selector(COMPARE, timeout=180_000).scroll_into_view_if_needed()
    assert page.get_attribute(COMPARE, "data-modes") == "2"
    rows = page.eval_on_selector_all(
        f"{COMPARE} [data-site]", "rows => rows.map(r => [r.dataset.site, Number(r.dataset.shift)])"
    )
    sites = dict(rows)
    assert {"linear.__call__", "dropout.__call__", "hidden"} <= set(sites)
    assert sites["linear.__call__"] == 0 and sites["dropout.__call__"] > 0
    page.click(f"{COMPARE} [data-site='dropout.__call__']")
    page.wait_for_selector(f"{COMPARE} canvas[data-drawn='1']", timeout=30_000)
    assert not blank_canvas(page, f"{COMPARE} canvas[data-drawn='1']")
    page.locator(COMPARE).scroll_into_view_if_needed()
    screenshot(page, "marimo_compare_view")


def test_patching_view_draws_shows_a_clicked_cell_and_toggles(idle_page):
    page = idle_page
    page.wait_for_selector(PATCHING, timeout=180_000).scroll_into_view_if_needed()
    heat = f"{PATCHING} canvas.jcnb-patch-heat[data-drawn='1']"
    assert page.eval_on_selector_all(heat, "cs => cs.map(c => c.dataset.method)") == ["exact", "attribution"]
    assert not blank_canvas(page, heat)
    box = page.locator(f"{heat} >> nth=0").bounding_box()
    layout = page.eval_on_selector(heat, "c => c.dataset")
    page.mouse.click(
        box["x"] + float(layout["left"]) + 2.5 * float(layout["cellW"]),
        box["y"] + float(layout["top"]) + 1.5 * float(layout["cellH"]),
    )
    page.wait_for_selector(f"{PATCHING} canvas.jcnb-patch-readout[data-drawn='1']", timeout=30_000)
    assert (
        page.text_content(f"{PATCHING} .jcnb-patch-detail-title") == "layers.1.__call__ patched at position 2"
    )
    page.click(f"{PATCHING} .jcnb-patch-choice[data-shown='attribution']")
    page.wait_for_selector(".jcnb-patching[data-shown='attribution']", timeout=30_000)
    assert page.locator(heat).count() == 1
    page.locator(PATCHING).scroll_into_view_if_needed()
    screenshot(page, "marimo_patching_view")


def test_lens_and_attention_views_draw_and_read_out_a_cell(idle_page):
    page = idle_page
    heat = f"{LENS} canvas.jcnb-lens-heat[data-drawn='1']"
    page.wait_for_selector(heat, timeout=180_000)
    page.locator(LENS).scroll_into_view_if_needed()
    assert not blank_canvas(page, heat)
    box, layout = page.locator(heat).bounding_box(), page.eval_on_selector(heat, "c => c.dataset")
    page.mouse.click(
        box["x"] + float(layout["left"]) + 5.5 * float(layout["cellW"]),
        box["y"] + float(layout["top"]) + 0.5 * float(layout["cellH"]),
    )
    page.wait_for_selector(f"{LENS} .jcnb-lens-top", timeout=30_000)
    assert page.locator(f"{LENS} .jcnb-lens-top tr").count() == 4  # three layers and the output
    screenshot(page, "marimo_lens_view")
    grid = f"{ATTENTION} canvas.jcnb-attention-grid[data-drawn='1']"
    page.wait_for_selector(grid, timeout=180_000)
    page.locator(ATTENTION).scroll_into_view_if_needed()
    assert not blank_canvas(page, grid)
    assert page.text_content(f"{ATTENTION} .jcnb-attention-enlarged-title").startswith(
        "layers.0.attention, head 0"
    )
    screenshot(page, "marimo_attention_view")


def test_widget_text_is_readable_on_marimos_light_page(idle_page):
    # marimo defines none of the host colour variables: the widgets use theme.css's defaults.
    page = idle_page
    for selector in (CAPTURE, LIVE, PATCHING, LENS, ATTENTION):
        page.wait_for_selector(selector, timeout=180_000)
        assert low_contrast_text(page, selector) == [], selector


def test_mode_panel_toggle_changes_the_view_and_compare_shows_a_comparison(idle_page):
    # marimo shows anywidgets only, and no widget made in a message handler
    # reaches the page: the panel is one anywidget that draws its comparison.
    assert issubclass(jaxcapture_nb.ModePanel, anywidget.AnyWidget), "ModePanel must be one anywidget"
    page = idle_page
    page.wait_for_selector(PANEL, timeout=180_000).scroll_into_view_if_needed()
    page.wait_for_selector("text=panel.model dropout.deterministic: False")
    before = int(page.get_attribute(PANEL, "data-revision"))
    page.click("input.jcnb-modes-switch[data-class='Dropout'][data-option='deterministic']")
    page.wait_for_selector(f"{PANEL}:not([data-revision='{before}'])", timeout=30_000)
    # The cell that reads panel.model ran again with the new view.
    shown = page.wait_for_selector("text=panel.model dropout.deterministic: True", timeout=60_000)
    shown.scroll_into_view_if_needed()
    screenshot(page, "marimo_mode_panel")

    # Compare runs in the kernel and the panel draws the comparison itself.
    in_panel = f"{PANEL} .jcnb-modes-comparison .jcnb-compare.jcnb-ready[data-modes='2']"
    assert page.locator(in_panel).count() == 0
    page.click("button.jcnb-modes-action[data-action=compare]")
    panel_compare = page.wait_for_selector(in_panel, timeout=120_000)
    rows = page.locator(f"{PANEL} .jcnb-cmp-body[data-site]")
    assert rows.count() > 0
    panel_compare.scroll_into_view_if_needed()
    screenshot(page, "marimo_mode_panel_compared")


# Luminance, 0 to 1, of what an element's style says: `color` and the
# background its theme paints (--jcnb-bg), or the background it is painted.
LUMINANCE_JS = """(el, what) => {
    const paint = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
    const style = getComputedStyle(el);
    const css = { text: style.color, theme: style.getPropertyValue('--jcnb-bg').trim(), painted: style.backgroundColor }[what];
    paint.fillStyle = '#888'; paint.fillStyle = css; paint.fillRect(0, 0, 1, 1);
    const [r, g, b] = paint.getImageData(0, 0, 1, 1).data;
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


def luminance(page, selector: str, what: str) -> float:
    return page.eval_on_selector(selector, LUMINANCE_JS, what)


@pytest.fixture(scope="module")
def dark_page(marimo, idle_page, browser):
    """A second page of the app in marimo's dark theme (``?theme=dark``), once its cells have run.

    The training loop's stop file exists by then: this notebook's loop ends at once.
    """
    page = browser.new_page()
    page.goto(f"{marimo[0]}/?theme=dark")
    page.wait_for_selector("text=/live steps trained: \\d+/", timeout=180_000)
    yield page
    page.close()


def test_the_widgets_follow_marimos_dark_theme(idle_page, dark_page):
    # marimo marks its theme on <body>; the widgets, in shadow roots of their own, follow it.
    marks = "() => [document.body.classList.contains('dark'), document.body.dataset.theme]"
    assert dark_page.evaluate(marks) == [True, "dark"] and idle_page.evaluate(marks) == [False, "light"]
    for selector in (CAPTURE, COMPARE, PANEL, LIVE, PATCHING, LENS, ATTENTION):
        for page, dark in ((idle_page, False), (dark_page, True)):
            page.wait_for_selector(selector, timeout=180_000)
            text, background = luminance(page, selector, "text"), luminance(page, selector, "theme")
            assert (text > 0.6, background < 0.2) == (dark, dark), (selector, dark, text, background)
        assert low_contrast_text(dark_page, selector) == [], selector
    # What the theme paints is dark as well: the comparison's heads, its filter box.
    for selector in (f"{COMPARE} .jcnb-cmp-heads", f"{COMPARE} input.jcnb-cmp-filter"):
        assert luminance(dark_page, selector, "painted") < 0.2, selector
        assert luminance(idle_page, selector, "painted") > 0.8, selector

    # The comparison with a detail open, and the panel, light and dark.
    for page, name in ((idle_page, "light"), (dark_page, "dark")):
        page.click(f"{COMPARE} [data-site='dropout.__call__']")
        page.wait_for_selector(f"{COMPARE} canvas[data-drawn='1']", timeout=30_000)
        page.locator(COMPARE).scroll_into_view_if_needed()
        screenshot(page, f"marimo_compare_view_{name}")
        page.locator(PANEL).scroll_into_view_if_needed()
        screenshot(page, f"marimo_mode_panel_{name}")
        page.locator(PATCHING).scroll_into_view_if_needed()
        screenshot(page, f"marimo_patching_view_{name}")
        page.locator(ATTENTION).scroll_into_view_if_needed()
        screenshot(page, f"marimo_lens_and_attention_{name}")
