"""The mode panel and the mode comparison in a real JupyterLab and Chromium."""

from lab import run_in_kernel
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

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
panel = mode_panel(model, inputs=(x,))
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

    # An invalid combination is refused: the message says what it needs, and
    # the switch goes back to what panel.model is.
    decode = switch("MultiHeadAttention", "decode")
    toggle_and_wait(page, decode)
    error = page.wait_for_selector(".jcnb-modes-error:not([hidden])")
    assert "not applied" in error.text_content() and "batch_size" in error.text_content()
    assert page.get_attribute(decode, "data-state") == "off" and not page.is_checked(decode)
    assert run_in_kernel(page, "print(bool(panel.error), panel.model.attention.decode)").split() == [
        "True",
        "False",
    ]
    assert "decode" not in page.text_content(".jcnb-modes-code")
    screenshot(page, "mode_panel_error")

    # Compare puts the current view against the model as it is, labelled.
    compare = "button.jcnb-modes-action[data-action=compare]"
    assert page.get_attribute(compare, "title") == "Compare the current view with the model as it is"
    page.click(compare)
    view = page.wait_for_selector(".jcnb-compare.jcnb-ready", timeout=120_000)
    view.scroll_into_view_if_needed()
    note = page.text_content(".jcnb-modes-compared")
    assert note == "The comparison below: model as it is against current view (Dropout.deterministic=True)."
    assert run_in_kernel(page, "print(*panel.comparison.modes, sep='|')").strip() == (
        "model as it is|current view (Dropout.deterministic=True)"
    )
    assert page.get_attribute(ROOT, "data-stale") == "false"
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

    assert dict(rows)["dropout.__call__"] > 0  # the one switch set

    page.click(".jcnb-compare [data-site]")
    page.wait_for_selector(".jcnb-compare canvas[data-drawn='1']").scroll_into_view_if_needed()
    assert not blank_canvas(page, ".jcnb-compare canvas[data-drawn='1']")
    screenshot(page, "mode_panel_compared")

    # A switch moved after the comparison marks it stale.
    page.locator(ROOT).scroll_into_view_if_needed()
    toggle_and_wait(page, switch("BatchNorm", "use_running_average"))
    assert page.get_attribute(ROOT, "data-stale") == "true"
    assert page.text_content(".jcnb-modes-compared").startswith("Stale: the switches changed since")

    # Every text of the panel reads at WCAG AA contrast in both themes.
    try:
        for theme, name in ((LIGHT, "light"), (DARK, "dark")):
            set_theme(page, theme)
            page.locator(ROOT).scroll_into_view_if_needed()
            assert low_contrast_text(page, ROOT) == [], name
            screenshot(page, f"mode_panel_{name}")
    finally:
        set_theme(page, LIGHT)
