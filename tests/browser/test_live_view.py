"""LiveView in a real JupyterLab and Chromium, while a training loop runs."""

from page_checks import blank_canvas, screenshot

SETUP = """
import os
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import watch

class Net(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 32, rngs=rngs)
        self.second = nnx.Linear(32, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "<b>act</b>", h)
        out = self.second(h)
        self.sow(nnx.Intermediate, "out", out)
        return out

model = Net(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jax.random.normal(jax.random.key(1), (64, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))

@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss
"""

# Trains until the test creates the file `stop-training`: the test looks at
# the view while the loop is still running.
LOOP = """
step = 0
with watch(model, keep_steps=64) as w:
    while step < 1_000_000 and not os.path.exists("stop-training"):
        loss = train_step(model, optimizer, x, y)
        w.log(step=step, loss=loss)
        step += 1
print("sent", w.view._progress["seen"], w.view._progress["recorded"])
"""


def test_the_view_updates_while_the_loop_runs_and_shows_what_it_was_sent(lab, open_notebook):
    _, _, root = lab
    (root / "stop-training").unlink(missing_ok=True)
    page = open_notebook("live_view.ipynb", [SETUP, LOOP])
    view = page.wait_for_selector(".jcnb-ready .jcnb-live[data-ready=true]", timeout=180_000)

    # Live: steps arrive while the cell is still running.
    page.wait_for_function(
        "() => Number(document.querySelector('.jcnb-live').dataset.steps) >= 20", timeout=120_000
    )
    assert view.get_attribute("data-done") == "false"
    running = page.evaluate("() => Number(document.querySelector('.jcnb-live').dataset.seen)")
    view.scroll_into_view_if_needed()
    screenshot(page, "live_view_running")

    (root / "stop-training").touch()
    page.wait_for_selector(".jcnb-live[data-done=true]", timeout=120_000)
    printed = page.wait_for_selector("text=/^sent \\d+ \\d+/", timeout=60_000).text_content().split()
    seen, recorded = int(printed[1]), int(printed[2])
    assert seen > running
    # The end of the block re-displays the output (for the saved picture), so
    # the view is looked up again from here on.
    assert page.get_attribute(".jcnb-live", "data-seen") == str(seen)
    assert page.get_attribute(".jcnb-live", "data-steps") == str(recorded)

    # One card per site, names as text; each histogram-over-steps canvas drew
    # every row the kernel kept.
    cards = page.eval_on_selector_all(
        ".jcnb-live-card", "cs => cs.map(c => [c.children[0].textContent, c.children[1].textContent])"
    )
    assert cards == [["<b>act</b>", "Intermediate"], ["out", "Intermediate"]]
    assert page.query_selector(".jcnb-live b") is None
    drawn = page.eval_on_selector_all("canvas.jcnb-live-over", "cs => cs.map(c => Number(c.dataset.drawn))")
    assert drawn == [recorded] * 2
    assert not blank_canvas(page, ".jcnb-live-card canvas.jcnb-live-over")
    assert "loss" in page.text_content(".jcnb-live-scalars")

    # A card opens one step's histogram, with a slider over the kept steps.
    page.click(".jcnb-live-card[data-site='1']")
    page.wait_for_selector("canvas.jcnb-live-step[data-drawn]")
    assert not blank_canvas(page, "canvas.jcnb-live-step")
    page.fill(".jcnb-live-slider", "0")
    page.wait_for_selector("canvas.jcnb-live-step[data-drawn='0']")

    # The filter hides the cards that do not match.
    page.fill(".jcnb-live-filter", "act")
    visible = page.eval_on_selector_all(".jcnb-live-card:not([hidden])", "cs => cs.length")
    assert visible == 1
    page.fill(".jcnb-live-filter", "")
    page.locator(".jcnb-live").scroll_into_view_if_needed()
    screenshot(page, "live_view_done")
