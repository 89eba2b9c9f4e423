"""CaptureView in a real JupyterLab and Chromium."""

import nbformat
from lab import THOUSAND_SITES, wait_for_idle_kernel
from page_checks import blank_canvas, screenshot

SETUP = """
import jax, jax.numpy as jnp
from flax import nnx

class Net(nnx.Module):
    def __init__(self, rngs):
        self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.head = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.conv(x))
        self.sow(nnx.Intermediate, "features", h)
        self.sow(nnx.Intermediate, "<img src=x onerror=window.__pwned=1>", h.mean())
        logits = self.head(h.reshape(x.shape[0], -1))
        self.sow(nnx.Intermediate, "log_logits", jnp.log(logits))
        return logits

model = Net(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (2, 8, 8, 1))
"""

MAGIC = """%%capture_intermediates model --methods
y = model(x)
"""


def test_rows_histogram_heatmap_filter_escaping_and_nonfinite_flag(open_notebook):
    page = open_notebook("capture_view.ipynb", [SETUP, "%load_ext jaxcapture_nb", MAGIC])
    view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    view.scroll_into_view_if_needed()

    # Rows: three sows and three method outputs, grouped by module path in
    # order of first appearance, names shown as text.
    rows = page.eval_on_selector_all(
        ".jcnb-body-row", "rows => rows.map(r => [r.children[0].textContent, r.children[1].textContent])"
    )
    assert rows == [
        ["conv", "__call__"],
        ["(root)", "features"],
        ["(root)", "<img src=x onerror=window.__pwned=1>"],
        ["(root)", "log_logits"],
        ["(root)", "__call__"],
        ["head", "__call__"],
    ]
    assert page.evaluate("() => window.__pwned") is None
    assert page.query_selector(".jcnb-root img") is None

    # The first non-finite site is flagged at the top; clicking it selects it.
    flag = page.wait_for_selector(".jcnb-flag", state="visible")
    assert "log_logits" in flag.text_content()
    flag.click()
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
    assert not blank_canvas(page, "canvas.jcnb-hist")

    # A 4-D site: its histogram and, after a round trip to the kernel, a heatmap.
    page.click(".jcnb-body-row:has(span:text-is('features'))")
    page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]", timeout=60_000)
    assert not blank_canvas(page, "canvas.jcnb-heat")
    assert page.eval_on_selector_all(".jcnb-axis-input", "inputs => inputs.length") == 2
    page.check(".jcnb-log input")
    screenshot(page, "capture_view_selected")

    # Sorting by mean puts the largest first; NaN means sort last.
    page.click(".jcnb-head span[data-key=mean]")
    first = page.eval_on_selector(".jcnb-body-row[style*='top: 0px']", "r => r.children[1].textContent")
    assert first != "log_logits"

    # The filter narrows the rows to matching paths.
    page.fill(".jcnb-filter", "^head")
    page.wait_for_selector(".jcnb-root[data-visible-rows='1']")
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") == 1
    screenshot(page, "capture_view_filtered")
    # Text that is not a regular expression is matched as it is, and the box says so.
    page.fill(".jcnb-filter", "head(")
    page.wait_for_selector(".jcnb-root[data-visible-rows='0']")
    assert "plain text" in page.get_attribute(".jcnb-filter.jcnb-bad", "title")


def test_a_thousand_sites_render_only_the_visible_rows(open_notebook):
    page = open_notebook("many.ipynb", [THOUSAND_SITES, "cap.show()"])
    page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    assert page.text_content(".jcnb-title") == "1000 sowed values"
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") <= 20
    page.eval_on_selector(".jcnb-scroller", "s => { s.scrollTop = s.scrollHeight; }")
    page.wait_for_selector(".jcnb-body-row:has(span:text-is('site0999'))")
    assert page.eval_on_selector_all(".jcnb-body-row", "rows => rows.length") <= 20
    page.click(".jcnb-body-row:has(span:text-is('site0999'))")
    page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
    assert page.eval_on_selector(".jcnb-root", "r => r.dataset.selected") == "999"
    screenshot(page, "capture_view_1000_sites")


def test_the_widget_works_in_notebook_7(notebook7, browser):
    url, token, root = notebook7
    cells = [SETUP, "%load_ext jaxcapture_nb", MAGIC]
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / "notebook7.ipynb")
    page = browser.new_page()
    try:
        page.goto(f"{url}/notebooks/notebook7.ipynb?token={token}")
        wait_for_idle_kernel(page)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
        view.scroll_into_view_if_needed()
        assert len(page.query_selector_all(".jcnb-body-row")) == 6
        page.click(".jcnb-body-row:has-text('features')")
        page.wait_for_selector("canvas.jcnb-hist[data-drawn=true]")
        assert not blank_canvas(page, "canvas.jcnb-hist")
        screenshot(page, "capture_view_notebook7")
    finally:
        page.close()


ATTENTION = """
import jax, jax.numpy as jnp
from flax import nnx

class Attention(nnx.Module):
    def __init__(self, rngs):
        self.qk = nnx.Linear(8, 16, rngs=rngs)

    def __call__(self, x):
        q, k = jnp.split(self.qk(x), 2, axis=-1)
        logits = q @ k.T
        causal = jnp.tril(jnp.ones((x.shape[0], x.shape[0]), bool))
        logits = jnp.where(causal, logits, -2.3819763e38)
        self.sow(nnx.Intermediate, "masked_logits", logits)
        return None, jax.nn.softmax(logits) @ k

model = Attention(nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (12, 8))
"""


def test_tuple_outputs_show_as_leaf_rows_and_masked_logits_draw_their_mask(open_notebook):
    page = open_notebook(
        "attention.ipynb",
        [ATTENTION, "%load_ext jaxcapture_nb", "%%capture_intermediates model --methods\ny = model(x)\n"],
    )
    view = page.wait_for_selector(".jcnb-ready .jcnb-root[data-ready=true]", timeout=180_000)
    view.scroll_into_view_if_needed()
    names = page.eval_on_selector_all(".jcnb-body-row", "rows => rows.map(r => r.children[1].textContent)")
    assert names == ["__call__", "masked_logits", "__call__[1]"]
    # Statistics near the float32 limit are finite, and no cell reads inf or nan.
    cells = page.eval_on_selector(
        ".jcnb-body-row:has(span:text-is('masked_logits'))", "r => [...r.children].map(c => c.textContent)"
    )
    assert not any(text in ("inf", "-inf", "nan") for text in cells)

    page.click(".jcnb-body-row:has(span:text-is('masked_logits'))")
    page.wait_for_selector("canvas.jcnb-heat[data-drawn=true]", timeout=60_000)
    # The causal mask shows: the heatmap holds more than one colour.
    colours = page.eval_on_selector(
        "canvas.jcnb-heat",
        """c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const seen = new Set();
            for (let i = 0; i < d.length; i += 4) if (d[i + 3]) seen.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]);
            return seen.size;
        }""",
    )
    assert colours > 1
    page.eval_on_selector("canvas.jcnb-heat", "c => c.scrollIntoView({block: 'center'})")
    screenshot(page, "capture_view_masked_logits")
