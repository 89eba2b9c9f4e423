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

# The panel as a saved notebook shows it where scripts do not run.
STATIC = """
from IPython.display import HTML
HTML(panel._repr_mimebundle_()[0]["text/html"])
"""

COMPARISON = """
compare_modes(model, x).show()
"""

ROOT = ".jcnb-modes[data-ready=true]"
IN_PANEL = f"{ROOT} .jcnb-modes-comparison"
# The CompareView of its own cell, not the comparison drawn inside the panel.
ALONE = ".jcnb-compare.jcnb-ready:not(.jcnb-modes .jcnb-compare)"


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


def top_of(page, selector: str) -> None:
    """Scrolls the notebook so the element's top is at the top of the view (for a screenshot)."""
    page.eval_on_selector(selector, "e => e.scrollIntoView({ block: 'start' })")


def compare_and_wait(page, modes: int):
    """Presses Compare and waits for the panel's own comparison of ``modes`` modes."""
    page.click("button.jcnb-modes-action[data-action=compare]")
    drawn = page.wait_for_selector(
        f"{IN_PANEL} .jcnb-compare.jcnb-ready[data-modes='{modes}']", timeout=120_000
    )
    page.wait_for_selector(f"{ROOT}[data-busy=false]")
    return drawn


def test_toggles_change_the_kernels_view_and_the_panel_draws_its_comparison(open_notebook):
    page = open_notebook("modes.ipynb", [SETUP, PANEL])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    cards = page.eval_on_selector_all(".jcnb-modes-card", "cards => cards.map(c => c.dataset.class)")
    assert cards == ["BatchNorm", "Dropout", "MultiHeadAttention"]
    assert page.is_hidden(IN_PANEL)  # nothing compared yet

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

    # Compare puts the current view against the model as it is, labelled,
    # and draws it inside the panel: the panel is one widget.
    compare = "button.jcnb-modes-action[data-action=compare]"
    assert page.get_attribute(compare, "title") == "Compare the current view with the model as it is"
    compare_and_wait(page, 2).scroll_into_view_if_needed()
    label = "current view (Dropout.deterministic=True)"
    assert (
        page.text_content(f"{IN_PANEL} .jcnb-modes-compared") == f"Compared: model as it is against {label}."
    )
    legend = page.eval_on_selector_all(
        f"{IN_PANEL} .jcnb-cmp-legend .jcnb-cmp-mode", "m => m.map(e => e.textContent)"
    )
    assert legend == ["model as it is", label]
    assert run_in_kernel(page, "print(*panel.comparison.modes, sep='|')").strip() == f"model as it is|{label}"
    assert page.get_attribute(ROOT, "data-stale") == "false"
    assert page.text_content(f"{IN_PANEL} .jcnb-cmp-note").startswith("shift: earth mover's distance")
    rows = page.eval_on_selector_all(
        f"{IN_PANEL} [data-site].jcnb-cmp-body",
        "rows => rows.map(r => [r.dataset.site, Number(r.dataset.shift)])",
    )
    kernel_sites = run_in_kernel(page, "print(*(s.site for s in panel.comparison.sites))").split()
    assert [site for site, _ in rows] == kernel_sites
    shifts = [shift for _, shift in rows if shift == shift]  # NaN (unscored) rows come last
    assert shifts == sorted(shifts, reverse=True) and shifts[0] > 0
    assert dict(rows)["linear.__call__"] == 0  # nothing before it depends on the mode
    assert dict(rows)["dropout.__call__"] > 0  # the one switch set
    # Rows read as CaptureView's do; the filter takes either name.
    dropout_row = f"{IN_PANEL} .jcnb-cmp-body[data-site='dropout.__call__']"
    assert page.text_content(f"{dropout_row} .jcnb-cmp-site") == "dropout (output)"
    page.fill(f"{IN_PANEL} input.jcnb-cmp-filter", "dropout \\(out")
    page.wait_for_selector(f"{IN_PANEL} .jcnb-compare[data-visible-rows='1']")
    page.fill(f"{IN_PANEL} input.jcnb-cmp-filter", "")
    page.wait_for_selector(f"{IN_PANEL} .jcnb-compare[data-visible-rows='{len(rows)}']")

    # A row's detail: the large histogram with axes, and a read-out of the bin under the pointer.
    page.click(f"{IN_PANEL} .jcnb-cmp-body[data-site='dropout.__call__']")
    large = f"{IN_PANEL} canvas.jcnb-cmp-large[data-drawn='1']"
    page.wait_for_selector(large).scroll_into_view_if_needed()
    assert not blank_canvas(page, large)
    page.hover(large)
    tip = page.wait_for_selector(f"{IN_PANEL} .jcnb-tooltip:not([hidden])")
    assert tip.text_content().startswith("values in [") and f"{label}: " in tip.text_content()
    screenshot(page, "mode_panel_compared")
    page.mouse.move(0, 0)

    # A switch moved after the comparison marks it stale, with a note saying so.
    page.locator(ROOT).scroll_into_view_if_needed()
    toggle_and_wait(page, switch("BatchNorm", "use_running_average"))
    assert page.get_attribute(ROOT, "data-stale") == "true"
    assert page.get_attribute(IN_PANEL, "data-stale") == "true"
    note = page.text_content(f"{IN_PANEL} .jcnb-modes-compared")
    assert (
        note.startswith("Stale: the switches or the Compare menu changed since this comparison")
        and "Compare again" in note
    )
    page.locator(IN_PANEL).scroll_into_view_if_needed()
    screenshot(page, "mode_panel_stale")

    # Against the presets: three modes, each labelled.
    page.select_option(f"{ROOT} select.jcnb-modes-against", "presets")
    page.wait_for_function(
        f"() => document.querySelector('{compare}').title.includes('train and eval presets')", timeout=30_000
    )
    compare_and_wait(page, 3)
    legend = page.eval_on_selector_all(
        f"{IN_PANEL} .jcnb-cmp-legend .jcnb-cmp-mode", "m => m.map(e => e.textContent)"
    )
    label = "current view (BatchNorm.use_running_average=True, Dropout.deterministic=True)"
    assert legend == ["train preset", "eval preset", label]
    # The new comparison sorts its sites anew; the open detail stays on its site.
    assert page.text_content(f"{IN_PANEL} .jcnb-cmp-detail-site") == "dropout (output)"
    selected = int(page.get_attribute(f"{IN_PANEL} .jcnb-compare", "data-selected"))
    assert (
        page.get_attribute(f"{IN_PANEL} .jcnb-cmp-body[data-index='{selected}']", "data-site")
        == "dropout.__call__"
    )
    assert page.get_attribute(ROOT, "data-stale") == "false"


def test_a_text_field_sends_its_value_on_enter_and_the_clear_button_unsets_it(open_notebook):
    page = open_notebook("modes_text.ipynb", [SETUP, PANEL])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    where = "[data-class='MultiHeadAttention'][data-option='batch_size']"
    field = f"input.jcnb-modes-text{where}"
    before = revision(page)
    page.fill(field, "(2, 3)")
    page.press(field, "Enter")
    page.wait_for_function(
        f"() => Number(document.querySelector('{ROOT}').dataset.revision) > {before}", timeout=30_000
    )
    settings = "print(panel.settings.get('MultiHeadAttention'))"
    assert run_in_kernel(page, settings).strip() == "{'batch_size': (2, 3)}"
    state = f"{ROOT} .jcnb-modes-card[data-class='MultiHeadAttention'] .jcnb-modes-set"
    assert page.text_content(state) == "(2, 3) · set"
    assert page.input_value(field) == "2,3"

    toggle_and_wait(page, f"button.jcnb-modes-clear{where}")
    assert run_in_kernel(page, settings).strip() == "None"
    assert page.input_value(field) == "" and page.locator(state).count() == 0


def test_the_saved_panel_reads_left_aligned_and_both_widgets_read_in_light_and_dark(open_notebook):
    page = open_notebook("modes_themes.ipynb", [SETUP, PANEL, STATIC, COMPARISON])
    static = page.wait_for_selector(".jp-RenderedHTMLCommon .jcnb-modes-static", timeout=180_000)
    static.scroll_into_view_if_needed()
    # JupyterLab right-aligns rendered table cells; the saved panel says left everywhere.
    aligned = page.eval_on_selector(
        ".jp-RenderedHTMLCommon .jcnb-modes-static",
        """el => [...el.querySelectorAll('td, th, pre')].map(e => getComputedStyle(e).textAlign)""",
    )
    assert set(aligned) == {"left"}
    lefts = page.eval_on_selector(
        ".jp-RenderedHTMLCommon .jcnb-modes-static",
        """el => [el.querySelector('table'), el.querySelector('pre')].map(e => Math.round(e.getBoundingClientRect().left))""",
    )
    assert lefts[0] == lefts[1]  # the code starts where the table does
    code = page.text_content(".jp-RenderedHTMLCommon .jcnb-modes-static pre")
    assert code == "view = nnx.view(model)"
    screenshot(page, "mode_panel_static")

    page.wait_for_selector(ROOT, timeout=180_000)
    toggle_and_wait(page, switch("Dropout", "deterministic"))
    compare_and_wait(page, 2)
    page.click(f"{IN_PANEL} .jcnb-cmp-body[data-site='dropout.__call__']")
    page.wait_for_selector(f"{IN_PANEL} canvas.jcnb-cmp-large[data-drawn='1']")
    page.wait_for_selector(ALONE, timeout=120_000)
    page.click(f"{ALONE} .jcnb-cmp-body[data-site='dropout.__call__']")
    page.wait_for_selector(f"{ALONE} canvas.jcnb-cmp-large[data-drawn='1']")
    try:
        for theme, name in ((LIGHT, "light"), (DARK, "dark")):
            set_theme(page, theme)
            # Canvases are drawn again in the theme's colours.
            for where in (IN_PANEL, ALONE):
                page.wait_for_selector(f"{where} canvas.jcnb-cmp-large[data-drawn='1']")
            assert low_contrast_text(page, ROOT) == [], name
            top_of(page, ROOT)
            screenshot(page, f"mode_panel_{name}")
            top_of(page, f"{IN_PANEL} .jcnb-compare")
            screenshot(page, f"mode_panel_comparison_{name}")
            assert low_contrast_text(page, ALONE) == [], name
            top_of(page, ALONE)
            screenshot(page, f"compare_view_beside_panel_{name}")
    finally:
        set_theme(page, LIGHT)


# A statistic added in Python, before the widgets are made.
ABSMAX = """
from jaxcapture_nb import _schema

_schema.STATS = (
    *_schema.STATS,
    _schema.Stat(
        "absmax", "largest |x|", "absmax", column=True, compact=True,
        derive=lambda st: max(abs(st["min"]), abs(st["max"])),
    ),
)
comparison = compare_modes(model, x)
comparison.show()
"""


def head_cells(page, where: str) -> list[list[str]]:
    """[statistic key, mode, text] of every statistic's column head of a comparison table."""
    return page.eval_on_selector_all(
        f"{where} .jcnb-cmp-head [data-key]",
        "cells => cells.map(c => [c.dataset.key, c.dataset.mode, c.textContent])",
    )


def test_a_statistic_added_in_python_is_a_column_of_both_comparison_tables(open_notebook):
    page = open_notebook("modes_absmax.ipynb", [SETUP, ABSMAX, PANEL])
    page.wait_for_selector(ALONE, timeout=180_000)
    columns = run_in_kernel(
        page, "for s in _schema.table_stats():\n    if s.compact: print(s.key, s.label, sep='=')"
    )
    columns = [column.split("=", 1) for column in columns.splitlines()]
    assert columns[-1] == ["absmax", "largest |x|"] and ["zero_pct", "zeros %"] in columns
    expected = [[key, str(mode), label] for mode in range(2) for key, label in columns]
    assert head_cells(page, ALONE) == expected

    # Each mode's value, written as the text table writes it.
    row = f"{ALONE} .jcnb-cmp-body[data-site='dropout.__call__']"
    shown = page.eval_on_selector_all(f"{row} [data-key=absmax]", "cells => cells.map(c => c.textContent)")
    kernel = run_in_kernel(
        page,
        "k = _schema.compare_columns().index('absmax')\n"
        "site = next(s for s in comparison.sites if s.site == 'dropout.__call__')\n"
        "print(*(_schema.number_text(v) for v in site.stats[:, k]))",
    )
    assert shown == kernel.split()
    page.click(row)
    detail = f"{ALONE} .jcnb-cmp-stats tr[data-stat=absmax] td"
    page.wait_for_selector(detail)
    texts = page.eval_on_selector_all(detail, "cells => cells.map(c => c.textContent)")
    assert texts == ["largest |x|", *shown]

    # The schema's colours are set on the widget, for its drawings to read.
    colours = page.eval_on_selector(
        ALONE,
        """el => [getComputedStyle(el).getPropertyValue('--jcnb-series').trim(),
                  ...[...el.querySelectorAll('.jcnb-cmp-legend .jcnb-cmp-mode')].map(
                      m => m.style.getPropertyValue('--jcnb-mode'))]""",
    )
    kernel = run_in_kernel(page, "print(_schema.SERIES_COLOUR, *_schema.MODE_COLOURS[:2])")
    assert colours == kernel.split()

    # The panel's comparison has the column too.
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    compare_and_wait(page, 2)
    assert head_cells(page, IN_PANEL) == expected
    series = "el => getComputedStyle(el).getPropertyValue('--jcnb-series').trim()"
    assert page.eval_on_selector(ROOT, series) == colours[0]
