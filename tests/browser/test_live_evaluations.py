"""A site's training and evaluation cards side by side, in a real JupyterLab and Chromium."""

from lab import wait_for_finished_watch
from page_checks import DARK, LIGHT, low_contrast_text, screenshot, set_theme

# Two sites, trained 8 steps with an evaluation after each: the sites arrive
# as hidden, out (training), then hidden, out (evaluation).
TRAIN_AND_EVALUATE = """
import jax, jax.numpy as jnp, optax
from flax import nnx
from jaxcapture_nb import watch

class Net(nnx.Module):
    def __init__(self, rngs):
        self.first, self.second = nnx.Linear(4, 16, rngs=rngs), nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "hidden", h)
        out = self.second(h)
        self.sow(nnx.Intermediate, "out", out)
        return out

@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss

@nnx.jit
def eval_step(model, x, y):
    return ((model(x) - y) ** 2).mean()

model = Net(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(0.05), wrt=nnx.Param)
x, y = jax.random.normal(jax.random.key(0), (64, 4)), jax.random.normal(jax.random.key(1), (64, 1))
with watch(model, bins=16) as w:
    for step in range(8):
        w.log(step=step, loss=train_step(model, optimizer, x, y), eval_loss=eval_step(model, x * 0.5, y))
print("sites", [(s.label, s.kind) for s in w.stream.series.values()])
"""

CARD = ".jcnb-live-card"
DETAIL = ".jcnb-live-detail"


def test_each_sites_evaluation_card_sits_right_after_its_training_card(open_notebook):
    page = open_notebook("live_evaluations.ipynb", [TRAIN_AND_EVALUATE])
    wait_for_finished_watch(page, timeout=180_000)
    page.wait_for_selector("text=/^sites /", timeout=60_000)
    page.wait_for_selector(f"{CARD}[data-site='3'] canvas.jcnb-live-over[data-drawn='8']")
    shown = page.eval_on_selector_all(
        CARD,
        "cs => cs.map(c => [c.dataset.site, c.querySelector('.jcnb-live-title').textContent,"
        " c.querySelector('.jcnb-live-kind').textContent])",
    )
    # The cards keep the kernel's order in data-site; on the page each
    # evaluation follows its site's training card.
    assert [(label, kind == "evaluation") for _, label, kind in shown] == [
        ("hidden", False),
        ("hidden", True),
        ("out", False),
        ("out", True),
    ], shown
    assert [site for site, _, _ in shown] == ["0", "2", "1", "3"], shown

    # A click on the evaluation card opens its own detail, under its row.
    page.click(f"{CARD}[data-site='2']")
    page.wait_for_selector(f"{DETAIL}[data-site='2']:not([hidden])")
    assert page.eval_on_selector(DETAIL, "d => d.previousElementSibling.classList.contains('jcnb-live-card')")
    clicked, detail = (page.locator(s).bounding_box() for s in (f"{CARD}[data-site='2']", DETAIL))
    assert clicked["y"] + clicked["height"] <= detail["y"]
    page.mouse.move(0, 0)
    for theme, name in ((LIGHT, "live_evaluations_light"), (DARK, "live_evaluations_dark")):
        set_theme(page, theme)
        assert low_contrast_text(page, ".jcnb-live") == []
        page.locator(".jcnb-live").scroll_into_view_if_needed()
        screenshot(page, name)
