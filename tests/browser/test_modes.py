"""The mode panel and the mode comparison in a real JupyterLab and Chromium."""

import json
import re

import nbformat
from lab import run_in_kernel
from page_checks import DARK, LIGHT, blank_canvas, low_contrast_text, screenshot, set_theme

SETUP = """
import jax, jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import compare_modes, mode_panel

class NormDropoutAttention(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(2, 8, 8, decode=False, rngs=rngs)

    def __call__(self, x):
        return self.attention(self.dropout(self.bn(self.linear(x))), deterministic=True)

model = NormDropoutAttention(nnx.Rngs(0))
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


# The text/plain of the panel's output, as the open notebook holds it (and would save it).
PICTURE_JS = """() => {
    for (const cell of window.jupyterapp.shell.currentWidget.content.widgets) {
        const outputs = cell.model.outputs;
        for (let i = 0; outputs && i < outputs.length; i++) {
            const text = outputs.get(i).data["text/plain"];
            if (typeof text === "string" && text.startsWith("ModePanel of")) return text;
        }
    }
    return "";
}"""


def picture(page) -> str:
    """What a saved notebook would show of the panel, as text."""
    return page.evaluate(PICTURE_JS)


def wait_for_picture(page, check: str) -> None:
    """Waits until the panel's output meets ``check`` (a JS expression of ``text``), then for its view.

    The kernel sends the output again as the panel changes, and JupyterLab
    draws it in a new view: elements found before then are gone.
    """
    page.wait_for_function(f"() => {{ const text = ({PICTURE_JS})(); return {check}; }}", timeout=60_000)
    page.wait_for_selector(ROOT, timeout=60_000)


def toggle_and_wait(page, selector: str) -> None:
    """Clicks a control and waits for the kernel's answer, and for the panel's output sent again."""
    before, shown = revision(page), picture(page)
    page.click(selector)
    page.wait_for_function(
        f"() => Number(document.querySelector('{ROOT}')?.dataset.revision) > {before}", timeout=30_000
    )
    wait_for_picture(page, f"text !== {json.dumps(shown)}")


def top_of(page, selector: str) -> None:
    """Scrolls the notebook so the element's top is at the top of the view (for a screenshot)."""
    page.eval_on_selector(selector, "e => e.scrollIntoView({ block: 'start' })")


def compare_and_wait(page, modes: int):
    """Presses Compare and waits for the panel's own comparison of ``modes`` modes, in its output too."""
    page.click("button.jcnb-modes-action[data-action=compare]")
    drawn = f"{IN_PANEL} .jcnb-compare.jcnb-ready[data-modes='{modes}']"
    page.wait_for_selector(drawn, timeout=120_000)
    # The comparison's text table in the output: a mean column per mode.
    wait_for_picture(page, f"text.includes('Compared: ') && text.split('mean [').length === {modes + 1}")
    page.wait_for_selector(f"{ROOT}[data-busy=false]")
    return page.locator(drawn)


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
from jaxcapture_nb.stats import schema

schema.STATS = (
    *schema.STATS,
    schema.Stat(
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
        page, "for s in schema.table_stats():\n    if s.compact: print(s.key, s.label, sep='=')"
    )
    columns = [column.split("=", 1) for column in columns.splitlines()]
    assert columns[-1] == ["absmax", "largest |x|"] and ["zero_pct", "zeros %"] in columns
    expected = [[key, str(mode), label] for mode in range(2) for key, label in columns]
    assert head_cells(page, ALONE) == expected

    # Each mode's value: in three digits in the row, in full (as the text table
    # writes it) in the cell's title and in the detail.
    row = f"{ALONE} .jcnb-cmp-body[data-site='dropout.__call__']"
    cells = page.eval_on_selector_all(
        f"{row} [data-key=absmax]", "cells => cells.map(c => [c.textContent, c.title])"
    )
    kernel = run_in_kernel(
        page,
        "k = schema.compare_columns().index('absmax')\n"
        "site = next(s for s in comparison.sites if s.site == 'dropout.__call__')\n"
        "print(*(schema.number_text(v) for v in site.stats[:, k]))",
    ).split()
    assert [title for _, title in cells] == [
        f"largest |x| in {mode}: {v}" for mode, v in zip(("train", "eval"), kernel, strict=True)
    ]
    assert [float(text) for text, _ in cells] == [float(f"{float(v):.3g}") for v in kernel]
    page.click(row)
    detail = f"{ALONE} .jcnb-cmp-stats tr[data-stat=absmax] td"
    page.wait_for_selector(detail)
    texts = page.eval_on_selector_all(detail, "cells => cells.map(c => c.textContent)")
    assert texts == ["largest |x|", *kernel]

    # The schema's colours are set on the widget, for its drawings to read.
    colours = page.eval_on_selector(
        ALONE,
        """el => [getComputedStyle(el).getPropertyValue('--jcnb-series').trim(),
                  ...[...el.querySelectorAll('.jcnb-cmp-legend .jcnb-cmp-mode')].map(
                      m => m.style.getPropertyValue('--jcnb-mode'))]""",
    )
    kernel = run_in_kernel(page, "print(schema.SERIES_COLOUR, *schema.MODE_COLOURS[:2])")
    assert colours == kernel.split()

    # The panel's comparison has the column too.
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    compare_and_wait(page, 2)
    assert head_cells(page, IN_PANEL) == expected
    series = "el => getComputedStyle(el).getPropertyValue('--jcnb-series').trim()"
    assert page.eval_on_selector(ROOT, series) == colours[0]


def test_a_notebook_saved_after_eval_shows_the_panel_as_it_was_saved(open_notebook, lab):
    _, _, root = lab
    page = open_notebook("modes_saved.ipynb", [SETUP, PANEL])
    page.wait_for_selector(ROOT, timeout=180_000).scroll_into_view_if_needed()
    assert re.search(r"\nDropout +deterministic +False +view\n", picture(page))

    # Eval, pressed in the browser: the kernel sends the panel's output again,
    # and JupyterLab draws it anew, with the focus where it was.
    toggle_and_wait(page, "button.jcnb-modes-action[data-action=eval]")
    assert page.locator(".jcnb-modes").count() == 1
    assert page.get_attribute(switch("Dropout", "deterministic"), "data-state") == "on"
    page.wait_for_function("() => document.activeElement?.dataset.action === 'eval'", timeout=10_000)

    def saved() -> dict:
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=60_000
        )
        [output] = nbformat.read(root / "modes_saved.ipynb", as_version=4).cells[1].outputs
        assert "application/vnd.jupyter.widget-view+json" not in output.data  # the picture alone
        return output.data

    data = saved()
    text = data["text/plain"]
    for cls, option in (("BatchNorm", "use_running_average"), ("Dropout", "deterministic")):
        assert re.search(rf"\n{cls} +{option} +True \* +view\n", text), text
    assert "view = nnx.view(model, only=nnx.BatchNorm, use_running_average=True)" in text
    assert data["text/html"].count("<b>True</b> (set)") == 3  # attention's deterministic too

    # A comparison, its detail open, then Train: the new view keeps the detail
    # open, and the saved picture shows the comparison marked stale.
    compare_and_wait(page, 2).scroll_into_view_if_needed()
    page.click(f"{IN_PANEL} .jcnb-cmp-body[data-site='dropout.__call__']")
    page.wait_for_selector(f"{IN_PANEL} canvas.jcnb-cmp-large[data-drawn='1']")
    page.locator(ROOT).scroll_into_view_if_needed()
    toggle_and_wait(page, "button.jcnb-modes-action[data-action=train]")
    assert page.get_attribute(ROOT, "data-stale") == "true"
    assert page.text_content(f"{IN_PANEL} .jcnb-cmp-detail-site") == "dropout (output)"
    data = saved()
    assert "Stale: the switches or the Compare menu changed since this comparison" in data["text/plain"]
    assert "deterministic=True" in data["text/plain"].split("Stale:")[1]  # the eval view compared
    assert "jcnb-compare-static" in data["text/html"]
    assert re.search(r"\nDropout +deterministic +False \* +view\n", data["text/plain"])
    # The picture as a page that shows the file shows it (GitHub, nbviewer): no script, no widget CSS.
    picture_page = page.context.new_page()
    try:
        picture_page.set_content(data["text/html"])
        assert picture_page.locator(".jcnb-modes-static table").count() == 2  # the settings, the comparison
        screenshot(picture_page, "mode_panel_saved_picture")
    finally:
        picture_page.close()


def cut_without_a_title(page, where: str) -> list[str]:
    """Texts naming a mode or a site in ``where`` that do not fit their box and carry no title saying them whole."""
    return page.eval_on_selector(
        where,
        """el => [...el.querySelectorAll('.jcnb-cmp-mode, .jcnb-cmp-group, .jcnb-cmp-stats-mode, .jcnb-cmp-site, .jcnb-cmp-head > *')]
            .filter(e => e.getClientRects().length && e.scrollWidth > e.clientWidth + 1)
            .filter(e => !(e.title || '').includes(e.textContent.trim()))
            .map(e => e.textContent)""",
    )


def outside(page, where: str) -> list[str]:
    """Every mode's column heads in ``where`` that lie outside the page or its table's visible box."""
    return page.eval_on_selector(
        where,
        """el => {
            const table = el.querySelector('.jcnb-cmp-table').getBoundingClientRect();
            const right = Math.min(window.innerWidth, table.right), left = Math.max(0, table.left);
            return [...el.querySelectorAll('.jcnb-cmp-group, .jcnb-cmp-head [data-key]')]
                .filter(e => { const r = e.getBoundingClientRect(); return r.left < left - 0.5 || r.right > right + 0.5; })
                .map(e => `${e.dataset.mode}:${e.dataset.key || 'group'}`);
        }""",
    )


def test_at_900_px_every_modes_columns_fit_and_sites_the_same_in_all_modes_say_so(open_notebook):
    page = open_notebook("modes_900.ipynb", [SETUP, COMPARISON, PANEL])
    page.wait_for_selector(ALONE, timeout=180_000)
    page.set_viewport_size({"width": 900, "height": 900})
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    page.wait_for_selector(f"{ALONE}[data-fits=true]", timeout=30_000)
    assert page.evaluate("() => window.innerWidth") == 900
    assert outside(page, ALONE) == [] and page.locator(f"{ALONE} .jcnb-cmp-group").count() == 2
    assert cut_without_a_title(page, ALONE) == []

    # The linear layer comes before every switch: every mode gave it the same values.
    same = page.eval_on_selector_all(
        f"{ALONE} .jcnb-cmp-body[data-same=true]", "rows => rows.map(r => r.dataset.site)"
    )
    assert same == ["linear.__call__"]
    mark = page.locator(f"{ALONE} .jcnb-cmp-body[data-site='linear.__call__'] .jcnb-cmp-same")
    assert mark.text_content() == "same in all modes"
    assert mark.get_attribute("title").startswith(
        "same in all modes: eval gave this site the same values as train"
    )
    assert page.locator(f"{ALONE} .jcnb-cmp-body[data-site='dropout.__call__'] .jcnb-cmp-same").count() == 0
    # Only train's statistics are drawn: eval's columns hold the mark.
    cells = page.eval_on_selector_all(
        f"{ALONE} .jcnb-cmp-body[data-site='linear.__call__'] [data-key]",
        "cells => cells.map(c => c.dataset.mode)",
    )
    assert cells == ["0", "0", "0"]
    page.locator(ALONE).scroll_into_view_if_needed()
    screenshot(page, "compare_view_900")

    # The panel against the presets: three modes, one with a long label, in 900 px too.
    page.locator(ROOT).scroll_into_view_if_needed()
    toggle_and_wait(page, switch("Dropout", "deterministic"))
    toggle_and_wait(page, switch("BatchNorm", "use_running_average"))
    page.select_option(f"{ROOT} select.jcnb-modes-against", "presets")
    compare_and_wait(page, 3)
    where = f"{IN_PANEL} .jcnb-compare"
    page.wait_for_selector(f"{where}[data-fits=true]", timeout=30_000)
    label = "current view (BatchNorm.use_running_average=True, Dropout.deterministic=True)"
    legend = page.eval_on_selector_all(
        f"{where} .jcnb-cmp-legend .jcnb-cmp-mode", "m => m.map(e => e.textContent)"
    )
    assert legend == ["train preset", "eval preset", label]  # whole, where it wraps
    assert page.get_attribute(f"{where} .jcnb-cmp-group[data-mode='2']", "title") == label
    assert outside(page, where) == [] and cut_without_a_title(page, where) == []
    assert page.get_attribute(f"{where} .jcnb-cmp-body[data-site='linear.__call__']", "data-same") == "true"
    page.click(f"{where} .jcnb-cmp-body[data-site='dropout.__call__']")
    page.wait_for_selector(f"{where} canvas.jcnb-cmp-large[data-drawn='1']")
    assert cut_without_a_title(page, where) == []  # the detail's heads too
    top_of(page, where)
    screenshot(page, "mode_panel_comparison_900")

    # Narrower still, three modes no longer fit: the table scrolls sideways
    # under the site column, which stays where it is.
    page.set_viewport_size({"width": 700, "height": 900})
    page.wait_for_selector(f"{where}[data-fits=false]", timeout=30_000)
    table = f"{where} .jcnb-cmp-table"
    page.eval_on_selector(table, "t => { t.scrollLeft = t.scrollWidth; }")
    page.wait_for_selector(f"{table}.jcnb-cmp-scrolled")
    frozen = page.eval_on_selector(
        table,
        """t => [t.getBoundingClientRect().left, t.scrollLeft,
                 ...[...t.querySelectorAll('.jcnb-cmp-site')].map(s => s.getBoundingClientRect().left)]""",
    )
    left, scrolled, sites = frozen[0], frozen[1], frozen[2:]
    assert scrolled > 0 and sites and all(abs(site - left) < 1 for site in sites), frozen
    top_of(page, where)
    screenshot(page, "mode_panel_comparison_700_scrolled")
