"""Saved runs opened again in a LiveView, and two runs compared, in a real JupyterLab and Chromium."""

from page_checks import blank_canvas, screenshot

RUNS = """
import pathlib, tempfile
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import compare_runs, open_run, watch

class Net(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(8, 32, rngs=rngs)
        self.second = nnx.Linear(32, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "hidden", h)
        out = self.second(h)
        self.sow(nnx.Intermediate, "out", out)
        return out

x = jax.random.normal(jax.random.key(1), (64, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))
logs = pathlib.Path(tempfile.mkdtemp())

def train(learning_rate):
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    with watch(model, log_dir=logs / f"lr-{learning_rate}", display=False) as w:
        for i in range(30):
            w.log(step=i, loss=step(model, optimizer))

train(0.01)
train(0.2)
slow, fast = open_run(logs / "lr-0.01"), open_run(logs / "lr-0.2")
slow
"""

COMPARE = 'compare_runs({"lr 0.01": slow, "lr 0.2": fast})'


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
    screenshot(page, "compared_runs")
