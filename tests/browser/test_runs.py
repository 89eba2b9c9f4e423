"""Saved runs opened again in a LiveView, overlaid, and compared, in a real JupyterLab and Chromium."""

import json
import pathlib
import re

from models import HiddenAndOutputMLP
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, no_raw_controls, screenshot, set_theme
from training import mse_train_step, source_text

RUNS = (
    """
import pathlib, tempfile
import jax, jax.numpy as jnp, optax
from flax import nnx
from IPython.display import display
from jaxcapture_nb import compare_runs, open_run, overlay_runs, watch

"""
    + source_text(HiddenAndOutputMLP, mse_train_step)
    + """
x = jax.random.normal(jax.random.key(1), (64, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))
logs = pathlib.Path(tempfile.mkdtemp())

def train(learning_rate, overlay=None):
    model = HiddenAndOutputMLP(nnx.Rngs(0), features=8, hidden=32)
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)
    log_dir = None if overlay else logs / f"lr-{learning_rate}"
    with watch(model, log_dir=log_dir, display=False) as w:
        if overlay:
            display(overlay_runs({**overlay, f"lr {learning_rate} (live)": w}))
        for i in range(30):
            w.log(step=i, loss=mse_train_step(model, optimizer, x, y))

train(0.01)
train(0.2)
slow, fast = open_run(logs / "lr-0.01"), open_run(logs / "lr-0.2")
slow
"""
)

COMPARE = 'compare_runs({"lr 0.01": slow, "lr 0.2": fast})'
OVERLAY = 'overlay_runs({"lr 0.01": logs / "lr-0.01", "lr 0.2": logs / "lr-0.2"})'
# The saved run's name holds a right-to-left override: the view writes it as an escape.
LIVE_OVERLAY = 'train(0.05, overlay={"lr 0.01\\u202e(saved)": logs / "lr-0.01"})'


def test_a_saved_run_opens_in_a_live_view_and_two_runs_compare(open_notebook):
    page = open_notebook("runs.ipynb", [RUNS, COMPARE])
    live = page.wait_for_selector(".jcnb-ready .jcnb-live[data-done=true]", timeout=180_000)
    live.scroll_into_view_if_needed()
    # Every site of the saved run, with its 30 steps drawn, and its loss.
    over = ".jcnb-live-card canvas.jcnb-live-over[data-drawn='30']"
    page.wait_for_selector(over)
    assert page.locator(".jcnb-live-card").count() == 2
    assert not blank_canvas(page, over)
    # Drawn in the schema's colours, not the grey a drawing gets without them.
    coloured = """c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] && Math.abs(d[i] - d[i + 2]) > 60) return true;
        return false;
    }"""
    assert page.eval_on_selector(over, coloured)
    assert "30 steps" in page.text_content(".jcnb-live-progress")
    screenshot(page, "opened_run")

    compare = page.wait_for_selector(".jcnb-compare.jcnb-ready", timeout=120_000)
    compare.scroll_into_view_if_needed()
    legend = page.eval_on_selector_all(".jcnb-cmp-legend .jcnb-cmp-mode", "ms => ms.map(m => m.textContent)")
    assert [text.strip() for text in legend] == ["lr 0.01", "lr 0.2"], legend
    shifts = page.eval_on_selector_all(".jcnb-cmp-body", "rs => rs.map(r => Number(r.dataset.shift))")
    assert len(shifts) == 2 and shifts == sorted(shifts, reverse=True) and shifts[0] > 0
    # It speaks of runs, names its step, and says a log keeps no shapes.
    assert "first run's histogram" in compare.query_selector(".jcnb-cmp-note").text_content()
    assert compare.query_selector(".jcnb-cmp-call-note").text_content() == "compared at step 29"
    compare.query_selector(".jcnb-cmp-body").click()
    shapes = page.eval_on_selector_all(
        ".jcnb-cmp-stats tr:nth-child(2) td", "tds => tds.map(t => t.textContent)"
    )
    assert shapes == ["shape", "not kept in the log", "not kept in the log"], shapes
    screenshot(page, "compared_runs")


# The colour of a canvas's pixels that are most saturated: what a run's line is drawn in.
HUES = """c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let best = null, most = 60;
    for (let i = 0; i < d.length; i += 4) {
        const spread = Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]);
        if (d[i + 3] > 200 && spread > most) [best, most] = [[d[i], d[i + 1], d[i + 2]], spread];
    }
    return best;
}"""


def test_two_saved_runs_overlay_in_one_view_with_a_legend_and_one_step_slider(open_notebook):
    page = open_notebook("overlay.ipynb", [RUNS, OVERLAY, LIVE_OVERLAY])
    page.wait_for_selector(".jcnb-live[data-done=true] .jcnb-live-legend:not([hidden])", timeout=240_000)
    view = page.locator(".jcnb-live:has(.jcnb-live-legend:not([hidden]))").first
    view.scroll_into_view_if_needed()
    legend = view.locator(".jcnb-live-run")
    assert legend.all_text_contents() == ["lr 0.01", "lr 0.2"]
    assert "2 runs" in view.locator(".jcnb-live-progress").text_content()

    # One card per site, holding each run's histograms over the same 30 steps, each in its colour.
    cards = view.locator(".jcnb-live-card")
    assert cards.count() == 2
    panels = cards.first.locator(".jcnb-live-panel:not([hidden]) canvas.jcnb-live-over")
    assert panels.count() == 2
    assert [panels.nth(j).get_attribute("data-drawn") for j in range(2)] == ["30", "30"]
    assert [panels.nth(j).get_attribute("data-x-ticks") for j in range(2)] == [
        panels.first.get_attribute("data-x-ticks")
    ] * 2
    hues = [panels.nth(j).evaluate(HUES) for j in range(2)]
    assert hues[0] != hues[1] and all(hues), hues
    labels = cards.first.locator(".jcnb-live-panel-label").all_text_contents()
    assert labels == ["lr 0.01", "lr 0.2"]
    # One loss chart with a line per run, smoothed alike.
    scalar = view.locator(".jcnb-live-scalar-canvas")
    assert scalar.count() == 1 and scalar.get_attribute("data-lines") == "2"
    smoothed = scalar.get_attribute("data-smoothed-last").split()
    assert len(smoothed) == 2 and smoothed[0] != smoothed[1]
    view.locator(".jcnb-live-smoothing").fill("0")
    assert scalar.get_attribute("data-smoothed-last").split() != smoothed
    screenshot(page, "overlay_heat")

    # The legend turns a run off everywhere, and on again.
    legend.nth(1).click()
    assert legend.nth(1).get_attribute("aria-pressed") == "false"
    assert cards.first.locator(".jcnb-live-panel:not([hidden])").count() == 1
    assert scalar.get_attribute("data-lines") == "1"
    # With every run hidden, a finished run's card says so, not that it waits for rows.
    legend.nth(0).click()
    hint = cards.first.locator(".jcnb-live-card-hint")
    assert hint.is_visible() and hint.text_content().startswith("every run that recorded this site is hidden")
    latest = view.locator(".jcnb-live-scalar .jcnb-live-latest").text_content()
    assert latest == "every run with values is hidden: show one in the legend"
    legend.nth(0).click()
    legend.nth(1).click()
    assert scalar.get_attribute("data-lines") == "2" and not hint.is_visible()

    # The run filter, a regular expression over the runs' names, shows the runs it matches.
    run_filter = view.locator(".jcnb-live-run-filter")
    run_filter.fill(r"0\.2$")
    assert scalar.get_attribute("data-lines") == "1"
    assert legend.nth(0).get_attribute("aria-pressed") == "false"
    assert "the run filter leaves it out" in legend.nth(0).get_attribute("title")
    assert cards.first.locator(".jcnb-live-panel:not([hidden])").count() == 1
    run_filter.fill("")
    assert scalar.get_attribute("data-lines") == "2"

    # A card's numbers download as CSV and JSON, a row per run and step.
    with page.expect_download() as download:
        view.locator(".jcnb-live-scalar .jcnb-live-export-button[data-format=csv]").click()
    assert download.value.suggested_filename == "loss.csv"
    lines = pathlib.Path(download.value.path()).read_text().splitlines()
    assert lines[0] == "run,step,value" and len(lines) == 1 + 2 * 30
    assert lines[1].startswith("lr 0.01,0,") and lines[-1].startswith("lr 0.2,29,")
    with page.expect_download() as download:
        cards.first.locator(".jcnb-live-export-button[data-format=json]").click()
    saved = json.loads(pathlib.Path(download.value.path()).read_text())
    assert saved["name"] == "hidden" and saved["kind"] == "Intermediate" and len(saved["rows"]) == 2 * 30
    assert {"run", "step", "mean", "std", "p0", "p50 (estimated)", "p100"} <= set(saved["rows"][0])
    # Percentiles read from the histogram say so, and how they were read.
    assert "read from each step's histogram" in saved["note"] and "exact zeros at 0" in saved["note"]
    # A download selects no card.
    assert "jcnb-selected" not in cards.first.get_attribute("class").split()

    # A drag across a chart over steps zooms every such chart to those steps; a double click zooms out.
    x_ticks = scalar.get_attribute("data-x-ticks")
    box = scalar.bounding_box()
    middle = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.4, middle)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.8, middle, steps=5)
    page.mouse.up()
    reset = view.locator(".jcnb-live-zoom-reset")
    assert reset.is_visible() and reset.text_content().startswith("steps "), reset.text_content()
    low, high = map(int, reset.text_content().split()[1].split("–"))
    assert 0 < low < high < 29, (low, high)
    assert scalar.get_attribute("data-x-ticks") != x_ticks
    zoomed = [int(panels.nth(j).get_attribute("data-drawn")) for j in range(2)]
    assert zoomed == [high - low + 1] * 2, (zoomed, low, high)
    assert view.locator(".jcnb-live-card.jcnb-selected").count() == 0  # the drag selected no card
    screenshot(page, "overlay_zoomed")
    scalar.dblclick()
    assert not reset.is_visible()
    assert [panels.nth(j).get_attribute("data-drawn") for j in range(2)] == ["30", "30"]
    assert scalar.get_attribute("data-x-ticks") == x_ticks

    # The scalar charts' horizontal axis counts steps, time since each run's first value, or the time of day.
    x_axis = view.locator(".jcnb-live-x-axis")
    x_axis.select_option("relative")
    assert scalar.get_attribute("data-x-axis") == "relative"
    ticks = scalar.get_attribute("data-x-ticks")
    assert re.fullmatch(r"[\d.]+ (s|min|h)( [\d.]+ (s|min|h))*", ticks), ticks
    screenshot(page, "overlay_relative_time")
    x_axis.select_option("wall")
    ticks = scalar.get_attribute("data-x-ticks")
    assert ticks and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in ticks.split()), ticks
    x_axis.select_option("step")
    assert scalar.get_attribute("data-x-ticks") == x_ticks

    # A card expands to its whole row with charts twice as tall, and back.
    grid = view.locator(".jcnb-live-grid").bounding_box()
    before = cards.first.bounding_box()
    heights = [panels.nth(j).bounding_box()["height"] for j in range(2)]
    cards.first.locator(".jcnb-live-expand").click()
    assert cards.first.locator(".jcnb-live-expand").get_attribute("aria-pressed") == "true"
    wide = cards.first.bounding_box()
    assert wide["width"] > 1.8 * before["width"] and wide["width"] > 0.95 * grid["width"], (wide, grid)
    assert [panels.nth(j).bounding_box()["height"] for j in range(2)] == [2 * h for h in heights]
    assert view.locator(".jcnb-live-card.jcnb-selected").count() == 0
    screenshot(page, "overlay_expanded")
    cards.first.locator(".jcnb-live-expand").click()
    assert cards.first.bounding_box()["width"] == before["width"]

    # The bands view overlays the runs' percentile bands on one chart.
    view.locator(".jcnb-live-view-button[data-view=bands]").click()
    bands = cards.first.locator(".jcnb-live-panel:not([hidden]) canvas.jcnb-live-over")
    assert bands.count() == 1 and bands.get_attribute("data-view") == "bands"
    assert not bands.evaluate(
        "c => !c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some(v => v)"
    )
    screenshot(page, "overlay_bands")
    # Each run's band is outlined in its colour: down a column of the second
    # run's chart its colour shows three times, the band's two edges and the median.
    out_bands = cards.nth(1).locator(".jcnb-live-panel:not([hidden]) canvas.jcnb-live-over")
    most_crossings = out_bands.evaluate(
        """(c) => {
          const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
          const near = (i) => data[i + 3] > 200 && Math.abs(data[i] - 201) < 40 && Math.abs(data[i + 1] - 106) < 40 && data[i + 2] < 60;
          let most = 0;
          for (let x = 0; x < width; x += 2) {
            let runs = 0, inside = false;
            for (let y = 0; y < height; y++) {
              const hit = near((y * width + x) * 4);
              if (hit && !inside) runs++;
              inside = hit;
            }
            most = Math.max(most, runs);
          }
          return most;
        }"""
    )
    assert most_crossings >= 3, most_crossings

    # One slider for both runs: the detail shows each run's histogram at the chosen step.
    cards.first.click()
    detail = view.locator(".jcnb-live-detail")
    detail.focus()
    page.keyboard.press("Home")
    assert detail.get_attribute("data-step") == "0"
    page.keyboard.press("ArrowRight")
    assert detail.get_attribute("data-step") == "1"
    assert view.locator(".jcnb-live-step").get_attribute("data-drawn") == "1 1"
    assert view.locator(".jcnb-live-step").get_attribute("data-lines") == "2"
    names = view.locator(".jcnb-live-run-numbers .jcnb-live-run-name").all_text_contents()
    assert names == ["lr 0.01 (step 1) ", "lr 0.2 (step 1) "]
    screenshot(page, "overlay_detail")
    # Run names are text in the text colour beside a swatch: readable in both themes.
    overlay = ".jcnb-live:has(.jcnb-live-legend:not([hidden]))"
    assert not low_contrast_text(page, overlay)
    set_theme(page, DARK)
    try:
        view.scroll_into_view_if_needed()
        screenshot(page, "overlay_dark")
        assert not low_contrast_text(page, overlay)
    finally:
        set_theme(page, LIGHT)

    # A run still training updates the view it shares with a saved run.
    live = page.locator(".jcnb-live").filter(has=page.locator(".jcnb-live-run", has_text="lr 0.05 (live)"))
    live.locator(".jcnb-live-progress", has_text="(live): 30 steps, done").wait_for(timeout=120_000)
    assert "lr 0.05 (live): 30 steps, done" in live.locator(".jcnb-live-progress").text_content()
    live_panels = live.locator(".jcnb-live-card").first.locator(
        ".jcnb-live-panel:not([hidden]) canvas.jcnb-live-over"
    )
    assert [live_panels.nth(j).get_attribute("data-drawn") for j in range(2)] == ["30", "30"]
    assert live.locator(".jcnb-live-run").all_text_contents()[0] == "lr 0.01\\u202e(saved)"
    assert live.locator(".jcnb-live-run").first.get_attribute("title") == "hide run lr 0.01\\u202e(saved)"
    assert no_raw_controls(live)
