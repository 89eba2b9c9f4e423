"""CaptureView on the Python side: traits, payload bytes, static fallback, plot."""

import re

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from lab import THOUSAND_SITES
from matplotlib.figure import Figure

from jaxcapture_nb import CaptureView, capture
from jaxcapture_nb._widgets import payload


class Wide(nnx.Module):
    def __call__(self, x):
        self.sow(nnx.Intermediate, "big", x)
        self.sow(nnx.Intermediate, "<b>bold</b> & <script>alert(1)</script>", x[0, :3])
        self.sow(nnx.Intermediate, "count", 3)
        return x


def capture_wide(keep="all"):
    model = Wide()
    x = jax.random.normal(jax.random.key(0), (1024, 1024)).at[0, 0].set(jnp.nan)
    with capture(model, keep=keep) as cap:
        model(x)
    return cap


def test_numbers_travel_as_binary_buffers_of_fixed_size_per_site():
    cap = capture_wide()
    view = cap.show()
    assert isinstance(view, CaptureView)
    n = len(cap.records)
    stats = np.frombuffer(view._stats, np.float64).reshape(n, len(payload.STAT_COLUMNS))
    hists = np.frombuffer(view._hists, np.int32).reshape(n, cap.bins)
    assert hists[0].sum() == 1024 * 1024 - 1
    assert stats[0][payload.STAT_COLUMNS.index("nan")] == 1
    assert np.isnan(stats[2]).all()  # the number 3: a row without statistics
    assert view._first_nonfinite == 0
    # Rows carry text only: no list of numbers travels as JSON.
    assert all(not isinstance(v, list) or k == "shape" for row in view._sites for k, v in row.items())


def test_a_selected_1m_element_site_costs_under_64_kib():
    view = capture_wide().show()
    view._selected = 0
    per_site = len(view._stats) // 3 + len(view._hists) // 3 + len(view._heatmap)
    assert view._heatmap_site == 0 and view._heatmap_shape == [205, 205]
    assert per_site < 64 * 1024
    pixels = np.frombuffer(view._heatmap, np.uint8).reshape(205, 205)
    assert pixels[0, 0] == payload.NAN_INDEX
    lo, hi = view._heatmap_range
    np.testing.assert_allclose([lo, hi], [-3, 3], atol=0.05)


def test_slices_of_higher_rank_arrays_follow_the_slice_index():
    class Cube(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "cube", x)
            return x

    x = jnp.arange(3 * 4 * 5, dtype=jnp.float32).reshape(3, 4, 5)
    model = Cube()
    with capture(model) as cap:
        model(x)
    view = cap.show()
    view._selected = 0
    first = view._heatmap
    view._slice_index = [2]
    assert view._heatmap_shape == [4, 5] and view._heatmap != first


def test_no_heatmap_without_a_kept_value_says_why():
    view = capture_wide(keep="summary").show()
    view._selected = 0
    assert view._heatmap == b"" and "keep='summary'" in view._heatmap_note


def test_saved_notebooks_get_a_plain_text_and_a_script_free_html_table():
    cap = capture_wide()
    data, _ = cap.show()._repr_mimebundle_()
    assert data["text/plain"] == cap.table()
    html = data["text/html"]
    assert "<script" not in html and "&lt;script&gt;" in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert html.count("<svg") == 2  # two arrays; the number has no histogram
    assert not re.search(r"0x[0-9a-f]{6,}", html + data["text/plain"])
    assert html == capture_wide().show()._repr_mimebundle_()[0]["text/html"]


def test_a_thousand_sites_build_one_small_payload():
    namespace = {}
    exec(THOUSAND_SITES, namespace)  # the cell the browser test and benchmark run
    cap = namespace["cap"]
    assert float(cap.records[-1].summary.mean) == 999.0
    view = cap.show()
    assert len(view._sites) == 1000
    assert len(view._stats) + len(view._hists) <= 1000 * (len(payload.STAT_COLUMNS) * 8 + cap.bins * 4)


def test_plot_returns_a_matplotlib_figure_with_one_axes_per_array():
    figure = capture_wide().plot()
    assert isinstance(figure, Figure) and len(figure.axes) == 2
