"""The mode panel and the mode comparison in a real JupyterLab and Chromium."""

from lab import run_in_kernel
from page_checks import blank_canvas, screenshot

SETUP = """
import jax, jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import compare_modes, mode_panel

class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(2, 8, 8, decode=False, rngs=rngs)

    def __call__(self, x):
        return self.attention(self.dropout(self.bn(self.linear(x))), deterministic=True)

model = Net(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (16, 3, 4))
"""

PANEL = """
panel = mode_panel(model, compare=lambda view: compare_modes(view, x))
panel
"""

ROOT = ".jcnb-modes[data-ready=true]"


def switch(cls: str, option: str) -> str:
    return f"input.jcnb-modes-switch[data-class='{cls}'][data-option='{option}']"


def revision(page) -> int:
    return int(page.get_attribute(ROOT, "data-revision"))


def toggle_and_wait(page, selector: str) -> None:
    before = revision(page)
    page.click(selector)
    page.wait_for_function(
        f"() => Number(document.querySelector('{ROOT}').dataset.revision) > {before}", timeout=30_000
    )


def test_toggles_change_the_kernels_view_and_the_comparison_renders_sorted(open_notebook):
    page = open_notebook("modes.ipynb", [SETUP, PANEL])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    cards = page.eval_on_selector_all(".jcnb-modes-card", "cards => cards.map(c => c.dataset.class)")
    assert cards == ["BatchNorm", "Dropout", "MultiHeadAttention"]

    # A toggle in the browser changes panel.model in the kernel, and nothing else.
    toggle_and_wait(page, switch("Dropout", "deterministic"))
    seen = run_in_kernel(
        page,
        "print(panel.model.dropout.deterministic, model.dropout.deterministic, "
        "panel.model.linear.kernel is model.linear.kernel)",
    )
    assert seen.split() == ["True", "False", "True"]

    # An invalid combination shows in the panel; the kernel keeps the last valid view.
    toggle_and_wait(page, switch("MultiHeadAttention", "decode"))
    error = page.wait_for_selector(".jcnb-modes-error:not([hidden])")
    assert "batch_size" in error.text_content()
    assert run_in_kernel(page, "print(bool(panel.error), panel.model.attention.decode)").split() == [
        "True",
        "False",
    ]
    screenshot(page, "mode_panel_error")
    before = revision(page)
    page.click("button.jcnb-modes-clear[data-class='MultiHeadAttention'][data-option='decode']")
    page.wait_for_function(f"() => Number(document.querySelector('{ROOT}').dataset.revision) > {before}")
    page.wait_for_selector(".jcnb-modes-error[hidden]", state="attached")

    # The compare action runs the registered function and shows its result, largest shift first.
    compare = "button.jcnb-modes-action[data-action=compare]"
    assert page.get_attribute(compare, "title") == "Run the compare function on the current view"
    page.click(compare)
    view = page.wait_for_selector(".jcnb-compare.jcnb-ready", timeout=120_000)
    view.scroll_into_view_if_needed()
    assert page.text_content(".jcnb-cmp-note").startswith("shift: earth mover's distance")
    screenshot(page, "compare_view_header")
    rows = page.eval_on_selector_all(
        ".jcnb-compare [data-site]", "rows => rows.map(r => [r.dataset.site, Number(r.dataset.shift)])"
    )
    kernel_sites = run_in_kernel(page, "print(*(s.site for s in panel.comparison.sites))").split()
    assert [site for site, _ in rows] == kernel_sites
    shifts = [shift for _, shift in rows if shift == shift]  # NaN (unscored) rows come last
    assert shifts == sorted(shifts, reverse=True) and shifts[0] > 0
    assert dict(rows)["linear.__call__"] == 0  # nothing before it depends on the mode

    page.click(".jcnb-compare [data-site]")
    page.wait_for_selector(".jcnb-compare canvas[data-drawn='1']").scroll_into_view_if_needed()
    assert not blank_canvas(page, ".jcnb-compare canvas[data-drawn='1']")
    screenshot(page, "mode_panel_compared")
    page.hover(".jcnb-compare canvas[data-drawn='1']")  # the hover read-out of a bin
    assert "train:" in page.text_content(".jcnb-cmp-tip")
    screenshot(page, "compare_view_detail")
