"""LiveView in a real JupyterLab and Chromium, while a training loop runs."""

from lab import wait_for_finished_watch
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme
from training import mse_train_step, source_text

SETUP = """
import os, time
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import watch

class MarkupNamedMLP(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 32, rngs=rngs)
        self.second = nnx.Linear(32, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "<b>act</b>", h)
        out = self.second(h)
        self.sow(nnx.Intermediate, "out", out)
        return out

model = MarkupNamedMLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jax.random.normal(jax.random.key(1), (64, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))

""" + source_text(mse_train_step)

# Waits for the file `start-training` before the first step (the test looks
# at the view before any row exists), then trains until the test creates
# `stop-training` (it looks at the view while the loop still runs).
LOOP = """
step = 0
with watch(model, keep_steps=64) as w:
    while not os.path.exists("start-training"):
        time.sleep(0.05)
    while step < 1_000_000 and not os.path.exists("stop-training"):
        loss = mse_train_step(model, optimizer, x, y)
        w.log(step=step, loss=loss)
        step += 1
print("sent", w.view._progress["seen"], w.view._progress["recorded"])
"""

# A run that diverges: the activations grow 1.7 times a step (to about
# +-400 by step 11) and hold NaNs from step 12 on. `h` goes through
# `perturb`, so with grads=True it is recorded as an activation and its
# gradient as a gradient.
DIVERGING = """
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import watch

class Diverging(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 32, rngs=rngs)
        self.second = nnx.Linear(32, 1, rngs=rngs)

    def __call__(self, x, t):
        h = jnp.where(t >= 12, jnp.nan, self.first(x) * 1.7**t)
        h = self.perturb("h", h)
        return self.second(nnx.relu(h))

model = Diverging(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(1e-6), wrt=nnx.Param)
x = jax.random.normal(jax.random.key(1), (64, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))

@nnx.jit
def train_step(model, optimizer, x, y, t):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x, t) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss

with watch(model, grads=True) as w:
    for t in range(20):
        w.log(step=t, loss=train_step(model, optimizer, x, y, jnp.float32(t)))
print("first", w.stream.first_nonfinite)
"""

PIXELS = "c => c.toDataURL()"
ROOT = ".jcnb-live"


def ticks(page, selector: str, axis: str) -> list[float]:
    """The tick values a canvas says it drew on an axis ("x" or "y")."""
    text = page.get_attribute(selector, f"data-{axis}-ticks") or ""
    return [float(v) for v in text.split()]


def hover_text(page, selector: str, x: float, y: float) -> str:
    """What the tooltip reads with the pointer at (x, y) of the element."""
    page.hover(selector, position={"x": x, "y": y})
    page.wait_for_selector(".jcnb-live .jcnb-tooltip:not([hidden])")
    return page.text_content(".jcnb-live .jcnb-tooltip")


def test_the_view_updates_while_the_loop_runs_and_shows_what_it_was_sent(lab, open_notebook):
    _, _, root = lab
    for name in ("start-training", "stop-training"):
        (root / name).unlink(missing_ok=True)
    page = open_notebook("live_view.ipynb", [SETUP, LOOP])

    # Before the first step: a hint, and no statistic or rate of nothing.
    page.wait_for_selector(".jcnb-ready .jcnb-live[data-compiling=true]", timeout=180_000)
    assert page.is_visible(".jcnb-live-waiting")
    assert "compiling" in page.text_content(".jcnb-live-waiting")
    shown = page.inner_text(ROOT)
    assert "inf" not in shown and "nan" not in shown and "steps/s" not in shown, shown
    screenshot(page, "live_view_compiling")
    (root / "start-training").touch()

    # Live: steps arrive while the cell is still running.
    view = page.wait_for_selector(".jcnb-live[data-compiling=false]", timeout=120_000)
    page.wait_for_function(
        "() => Number(document.querySelector('.jcnb-live').dataset.steps) >= 20", timeout=120_000
    )
    assert view.get_attribute("data-done") == "false"
    assert not page.is_visible(".jcnb-live-waiting")
    assert "steps/s" in page.text_content(".jcnb-live-progress")
    running = page.evaluate("() => Number(document.querySelector('.jcnb-live').dataset.seen)")
    view.scroll_into_view_if_needed()
    screenshot(page, "live_view_running")

    (root / "stop-training").touch()
    wait_for_finished_watch(page, timeout=120_000)
    printed = page.wait_for_selector("text=/^sent \\d+ \\d+/", timeout=60_000).text_content().split()
    seen, recorded = int(printed[1]), int(printed[2])
    assert seen > running
    # The end of the block re-displays the output (for the saved picture), so
    # the view is looked up again from here on.
    assert page.get_attribute(ROOT, "data-seen") == str(seen)
    assert page.get_attribute(ROOT, "data-steps") == str(recorded)

    # One card per site, names as text; each histogram-over-steps canvas drew
    # every row the kernel kept.
    cards = page.eval_on_selector_all(
        ".jcnb-live-card",
        "cs => cs.map(c => [c.querySelector('.jcnb-live-title').textContent, c.querySelector('.jcnb-live-kind').textContent])",
    )
    assert cards == [["<b>act</b>", "Intermediate"], ["out", "Intermediate"]]
    assert page.query_selector(".jcnb-live b") is None
    drawn = page.eval_on_selector_all("canvas.jcnb-live-over", "cs => cs.map(c => Number(c.dataset.drawn))")
    assert drawn == [recorded] * 2
    assert not blank_canvas(page, ".jcnb-live-card canvas.jcnb-live-over")
    assert "loss" in page.text_content(".jcnb-live-scalars")
    # The small traces say what they show; no "%0".
    labels = page.eval_on_selector_all(".jcnb-live-trace-label", "ls => ls.map(l => l.textContent)")
    assert [label.split(" ")[0] for label in labels[:4]] == ["mean", "std", "zeros", "NaN/Inf"]
    assert "%0" not in page.inner_text(ROOT)

    over = ".jcnb-live-card[data-site='0'] canvas.jcnb-live-over"
    check_axes_and_key(page, over, seen)
    check_histogram_views(page, over)
    check_scalars(page)
    check_hover(page, over)
    check_step_keys(page)

    # The filter hides the cards that do not match.
    page.fill(".jcnb-live-filter", "act")
    visible = page.eval_on_selector_all(".jcnb-live-card:not([hidden])", "cs => cs.length")
    assert visible == 1
    page.fill(".jcnb-live-filter", "")
    page.locator(ROOT).scroll_into_view_if_needed()
    screenshot(page, "live_view_done")


def check_axes_and_key(page, over: str, seen: int) -> None:
    """Value and step axes with ticks, and a key naming the percentile bands."""
    steps = ticks(page, over, "x")
    assert len(steps) >= 3 and steps[0] == 0 and steps[-1] <= seen
    assert all(v == int(v) for v in steps)
    assert len(ticks(page, over, "y")) >= 3
    key = page.text_content(".jcnb-live-key")
    for band in ("0th / 100th", "7th–93rd", "16th–84th", "31st–69th", "median"):
        assert band in key, key


def check_histogram_views(page, over: str) -> None:
    """Heat, offset and overlay draw differently; the count scale changes the drawing."""
    assert page.get_attribute(ROOT, "data-view") == "heat"
    pictures = {"heat": page.eval_on_selector(over, PIXELS)}
    for name in ("offset", "overlay"):
        page.click(f".jcnb-live-view-button[data-view={name}]")
        assert page.get_attribute(ROOT, "data-view") == name
        assert page.get_attribute(over, "data-view") == name
        assert page.get_attribute(f".jcnb-live-view-button[data-view={name}]", "aria-pressed") == "true"
        pictures[name] = page.eval_on_selector(over, PIXELS)
        page.locator(".jcnb-live-grid").scroll_into_view_if_needed()
        screenshot(page, f"live_view_{name}")
    assert len(set(pictures.values())) == 3
    # Offset: values across, steps down, so the y ticks are whole steps.
    page.click(".jcnb-live-view-button[data-view=offset]")
    assert all(v == int(v) for v in ticks(page, over, "y"))
    page.click(".jcnb-live-view-button[data-view=overlay]")
    linear = page.eval_on_selector(over, PIXELS)
    page.check(".jcnb-live-count-log")
    assert page.get_attribute(ROOT, "data-count-scale") == "log"
    assert page.eval_on_selector(over, PIXELS) != linear
    assert 10 in ticks(page, over, "y") or 100 in ticks(page, over, "y")
    screenshot(page, "live_view_overlay_log")
    page.uncheck(".jcnb-live-count-log")
    page.click(".jcnb-live-view-button[data-view=heat]")


def check_scalars(page) -> None:
    """Axes, TensorBoard's smoothing (default 0.6) and a log value axis."""
    chart = ".jcnb-live-scalar canvas"
    assert page.get_attribute(ROOT, "data-smoothing") == "0.6"
    assert page.input_value(".jcnb-live-smoothing") == "0.6"
    assert len(ticks(page, chart, "x")) >= 3 and len(ticks(page, chart, "y")) >= 2
    # The latest value is in the card's title, not drawn on the chart.
    assert "smoothed" in page.text_content(".jcnb-live-scalar .jcnb-live-latest")
    before = (page.get_attribute(chart, "data-smoothed-last"), page.eval_on_selector(chart, PIXELS))
    page.fill(".jcnb-live-smoothing", "0.95")
    assert page.get_attribute(ROOT, "data-smoothing") == "0.95"
    after = (page.get_attribute(chart, "data-smoothed-last"), page.eval_on_selector(chart, PIXELS))
    assert after[0] != before[0] and after[1] != before[1]
    page.check(".jcnb-live-scalar-log")
    assert page.get_attribute(chart, "data-scale") == "log"
    assert all(v > 0 for v in ticks(page, chart, "y"))
    page.locator(".jcnb-live-scalars").scroll_into_view_if_needed()
    screenshot(page, "live_view_scalar_log")
    page.uncheck(".jcnb-live-scalar-log")
    page.fill(".jcnb-live-smoothing", "0.6")


def check_hover(page, over: str) -> None:
    """Every chart reads out the step and value under the pointer."""
    box = page.locator(over).bounding_box()
    text = hover_text(page, over, box["width"] * 0.6, box["height"] * 0.5)
    assert text.startswith("step ") and "50th" in text, text
    screenshot(page, "live_view_hover")
    trace = ".jcnb-live-card[data-site='0'] .jcnb-live-trace[data-stat=mean] canvas"
    assert "step" in hover_text(page, trace, 40, 15) and "value" in page.text_content(".jcnb-tooltip")
    text = hover_text(page, ".jcnb-live-scalar canvas", 200, 60)
    assert text.startswith("step ") and "smoothed" in text, text
    page.mouse.move(0, 0)


def check_step_keys(page) -> None:
    """The detail's step: arrow keys, Home/End, and a typed step number."""
    page.click(".jcnb-live-card[data-site='1']")
    page.wait_for_selector("canvas.jcnb-live-step[data-drawn]")
    assert not blank_canvas(page, "canvas.jcnb-live-step")
    assert len(ticks(page, "canvas.jcnb-live-step", "x")) >= 3
    text = hover_text(page, "canvas.jcnb-live-step", 250, 100)
    assert "values [" in text and "count" in text, text
    detail = ".jcnb-live-detail"
    steps = page.evaluate("() => Number(document.querySelector('.jcnb-live-slider').max) + 1")
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    cell = page.evaluate(active)
    page.focus(detail)
    page.keyboard.press("Home")
    assert page.get_attribute(detail, "data-row") == "0"
    assert page.input_value(".jcnb-live-slider") == "0"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute(detail, "data-row") == "2"
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute(detail, "data-row") == "1"
    page.keyboard.press("End")
    assert page.get_attribute(detail, "data-row") == str(steps - 1)
    # The notebook did not take the keys: the same cell is still active.
    assert page.evaluate(active) == cell
    # A typed step goes to that step, or to the recorded step nearest to it.
    recorded = page.evaluate("() => Number(document.querySelector('.jcnb-live-step-input').min)")
    page.fill(".jcnb-live-step-input", str(recorded))
    page.press(".jcnb-live-step-input", "Enter")
    assert page.get_attribute(detail, "data-step") == str(recorded)
    assert page.input_value(".jcnb-live-slider") == "0"
    page.fill(".jcnb-live-step-input", "-50")
    page.press(".jcnb-live-step-input", "Enter")
    assert page.get_attribute(detail, "data-row") == "0"
    page.fill(".jcnb-live-step-input", "99999999")
    page.press(".jcnb-live-step-input", "Enter")
    assert page.get_attribute(detail, "data-row") == str(steps - 1)
    page.locator(detail).scroll_into_view_if_needed()
    screenshot(page, "live_view_detail")
    page.click(".jcnb-live-card[data-site='1']")  # closes the detail


def test_a_diverging_run_shows_its_scale_and_opens_at_the_first_nonfinite_step(open_notebook):
    page = open_notebook("live_view_nan.ipynb", [DIVERGING])
    wait_for_finished_watch(page, timeout=180_000)
    printed = page.wait_for_selector("text=/^first \\(/", timeout=60_000).text_content()
    assert "12)" in printed, printed

    # A perturbed value is an activation; its gradient a gradient.
    kinds = page.eval_on_selector_all(".jcnb-live-kind", "ks => ks.map(k => k.textContent)")
    assert sorted(kinds) == ["activation", "gradient"]
    assert "Perturbation" not in page.inner_text(ROOT)

    # The value axis shows how far the values went before the NaNs.
    site = page.get_attribute(".jcnb-live-flag", "data-site")
    over = f".jcnb-live-card[data-site='{site}'] canvas.jcnb-live-over"
    assert max(abs(v) for v in ticks(page, over, "y")) >= 300

    flag = page.text_content(".jcnb-live-flag")
    assert "h (activation) at step 12" in flag and "last finite step 11" in flag, flag
    page.click(".jcnb-live-flag")
    detail = ".jcnb-live-detail"
    page.wait_for_selector(f"{detail}:not([hidden])")
    assert page.get_attribute(detail, "data-step") == "12"
    assert page.get_attribute(detail, "data-marked-step") == "12"
    assert "first NaN/Inf" in page.text_content(".jcnb-live-detail-title")
    assert "last finite step 11" in page.text_content(".jcnb-live-step-note")
    assert page.get_attribute(f".jcnb-live-card[data-site='{site}']", "data-marked-step") == "12"
    assert page.evaluate("() => document.activeElement.classList.contains('jcnb-live-detail')")
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute(detail, "data-step") == "11"
    page.keyboard.press("ArrowRight")
    page.locator(ROOT).scroll_into_view_if_needed()
    screenshot(page, "live_view_nonfinite")

    try:
        for theme, name in ((LIGHT, "live_view_light"), (DARK, "live_view_dark")):
            before = page.eval_on_selector("canvas.jcnb-live-over", PIXELS)
            set_theme(page, theme)
            if theme == DARK:  # the canvases are drawn again in the theme's colours
                page.wait_for_function(
                    "(before) => document.querySelector('canvas.jcnb-live-over').toDataURL() !== before",
                    arg=before,
                    timeout=30_000,
                )
            assert low_contrast_text(page, ROOT) == []
            page.locator(ROOT).scroll_into_view_if_needed()
            screenshot(page, name)
    finally:
        set_theme(page, LIGHT)


# A statistic derived in Python, a renamed label and other percentile bands:
# the view takes each from the schema the kernel sends.
SCHEMA_CHANGED = """
import jax.numpy as jnp
from jaxcapture_nb.stats import schema
from jaxcapture_nb import summarize, watch

absmax = schema.Stat(
    "absmax", "largest |x|", "absmax", column=True, derive=lambda st: max(abs(st["min"]), abs(st["max"]))
)
average = schema.Stat("mean", "average", "mean", column=True, compact=True)
schema.STATS = (*(average if s.key == "mean" else s for s in schema.STATS), absmax)
schema.PERCENTILES = (0, 10, 50, 90, 100)
schema.BANDS = ((10, 90, 0.3),)
with watch(bins=16) as w:
    for step in range(4):
        w.update(step, {"values": summarize(jnp.linspace(-3.0 - step, 2.0, 40), bins=16)})
"""


def test_the_view_takes_its_statistics_bands_and_labels_from_the_schema(open_notebook):
    page = open_notebook("live_view_schema.ipynb", [SCHEMA_CHANGED])
    wait_for_finished_watch(page, timeout=180_000)
    over = ".jcnb-live-card[data-site='0'] canvas.jcnb-live-over"
    page.wait_for_selector(f"{over}[data-drawn='4']")
    colour = page.evaluate(
        f"() => getComputedStyle(document.querySelector('{ROOT}')).getPropertyValue('--jcnb-series')"
    )
    assert colour.strip() == "#4c8ed9"  # schema.SERIES_COLOUR

    # The traces keep their statistics and take the schema's labels.
    labels = page.eval_on_selector_all(".jcnb-live-trace-label", "ls => ls.map(l => l.textContent)")
    assert labels[0].startswith("average ") and labels[2].startswith("zeros % "), labels
    # The view the cell sent again draws its key on its first draw: read that one, once drawn.
    drawn_key = f"{ROOT}[data-ready='true'][data-done='true'] .jcnb-live-key"
    page.wait_for_selector(drawn_key)
    key = page.text_content(drawn_key)
    assert "10th–90th" in key and "0th / 100th" in key and "7th" not in key, key
    box = page.locator(over).bounding_box()
    text = hover_text(page, over, box["width"] * 0.6, box["height"] * 0.5)
    assert "10th" in text and "90th" in text and "7th" not in text, text
    page.mouse.move(0, 0)

    # The detail lists every statistic the tables show, the derived one too,
    # and the NaN/Inf counts, each with its label and as its format writes it
    # (not the histogram's range edges).
    page.click(".jcnb-live-card[data-site='0']")
    page.wait_for_selector(".jcnb-live-detail:not([hidden])")
    cells = page.eval_on_selector_all(
        ".jcnb-live-numbers [data-key]", "cs => cs.map(c => [c.dataset.key, c.textContent])"
    )
    keys = [k for k, _ in cells]
    assert keys == ["mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf", "absmax"]
    shown = dict(cells)
    assert shown["absmax"] == "largest |x| 6" and shown["min"] == "min -6", shown
    assert shown["mean"].startswith("average ") and shown["zero_pct"] == "zeros % 0.0", shown
    assert shown["nan"] == "NaN 0", shown
    page.mouse.move(0, 0)
    # Scrolled by the page itself: a redraw that replaces the detail between
    # Playwright's look-up and its scroll would otherwise fail the test.
    page.evaluate("() => document.querySelector('.jcnb-live-detail').scrollIntoView({block: 'nearest'})")
    screenshot(page, "live_view_schema_detail")


# A tiny value (+-0.01) that holds only NaNs from step 38, and a loss with
# one spike at step 20 that overflows at step 37 and is NaN after.
NONFINITE_TAIL = """
import math
import jax.numpy as jnp
from jaxcapture_nb import summarize, watch

with watch(bins=16) as w:
    for step in range(40):
        values = jnp.linspace(-0.01, 0.01, 40) if step < 38 else jnp.full(40, jnp.nan)
        w.update(step, {"tiny": summarize(values, bins=16)})
        loss = 50.0 if step == 20 else math.inf if step == 37 else math.nan if step > 37 else 1 / (step + 1)
        w.log(step=step, loss=loss)
print("first", w.stream.first_nonfinite)
"""


def test_steps_of_only_nan_keep_the_axes_and_a_logged_inf_is_the_first_flag(open_notebook):
    page = open_notebook("live_view_tail.ipynb", [NONFINITE_TAIL])
    wait_for_finished_watch(page, timeout=180_000)
    assert "('loss', 37)" in page.wait_for_selector("text=/^first \\(/", timeout=60_000).text_content()

    # The steps of only NaN are marked, and leave the value axis to the values.
    over = ".jcnb-live-card canvas.jcnb-live-over"
    assert page.get_attribute(over, "data-unfinite") == "2"
    assert max(abs(v) for v in ticks(page, over, "y")) <= 0.02
    page.click(".jcnb-live-view-button[data-view=offset]")
    assert page.get_attribute(over, "data-unfinite") == "2"
    assert max(abs(v) for v in ticks(page, over, "x")) <= 0.02
    page.click(".jcnb-live-view-button[data-view=heat]")

    # The loss overflowed first: the flag says so, and its chart marks each NaN/Inf.
    flag = page.text_content(".jcnb-live-flag")
    assert "loss at step 37" in flag and "last finite step 36" in flag, flag
    chart = ".jcnb-live-scalar-canvas"
    assert page.get_attribute(chart, "data-nonfinite") == "3"
    assert "NaN" in page.text_content(".jcnb-live-latest")

    # One spike does not flatten the rest, until outliers are shown.
    assert page.get_attribute(ROOT, "data-outliers") == "ignored"
    assert float(page.get_attribute(chart, "data-y-range").split()[1]) < 10
    page.locator(ROOT).scroll_into_view_if_needed()
    screenshot(page, "live_view_nonfinite_tail")
    page.click(".jcnb-live-outliers")
    assert page.get_attribute(ROOT, "data-outliers") == "shown"
    assert float(page.get_attribute(chart, "data-y-range").split()[1]) == 50
