"""CaptureView on the Python side: traits, payload bytes, static fallback, plot."""

import re

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from lab import THOUSAND_SITES
from matplotlib.figure import Figure

from jaxcapture_nb import CaptureView, capture
from jaxcapture_nb.stats.records import site_label, site_name
from jaxcapture_nb.views import payload


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


class Masked(nnx.Module):
    """A ReLU layer, logits masked with -inf, a site of NaNs, and a returned layer output."""

    def __init__(self, rngs):
        self.head = nnx.Linear(6, 10, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(x)
        self.sow(nnx.Intermediate, "relu", h)
        logits = self.head(h)
        self.sow(nnx.Intermediate, "masked", jnp.where(jnp.arange(10) < 6, logits, -jnp.inf))
        self.sow(nnx.Intermediate, "all_nan", jnp.full((4, 6), jnp.nan))
        return logits


def capture_masked():
    model = Masked(nnx.Rngs(0))
    with capture(model, methods=True) as cap:
        model(jax.random.normal(jax.random.key(0), (4, 6)))
    return cap


def test_call_outputs_are_named_as_outputs_and_the_models_own_says_what_it_repeats():
    view = capture_masked().show()
    rows = {row["label"]: row for row in view._sites}
    assert set(rows) == {"relu", "head (output)", "masked", "all_nan", "model output"}
    assert rows["head (output)"]["shown_name"] == "(output)" and rows["head (output)"]["name"] == "__call__"
    labels = [row["label"] for row in view._sites]
    # The model returns its head's result: the same values, said once.
    assert rows["model output"]["same_as"] == labels.index("head (output)")
    assert all(row["same_as"] == -1 for label, row in rows.items() if label != "model output")


def test_a_site_label_is_one_function_every_view_can_call():
    assert site_label(("blocks", 0, "attn"), "__call__[1]") == "blocks.0.attn (output[1])"
    assert site_label((), "__call__['logits']") == "model output['logits']"
    assert site_label(("enc",), "__call__x") == "enc.__call__x"  # a sowed name, not an output
    assert site_name(("enc",), "hidden") == "hidden"


def test_nonfinite_counts_travel_with_the_statistics_over_finite_values():
    view = capture_masked().show()
    labels = [row["label"] for row in view._sites]
    stats = np.frombuffer(view._stats, np.float64).reshape(len(labels), len(payload.STAT_COLUMNS))
    masked = dict(zip(payload.STAT_COLUMNS, stats[labels.index("masked")], strict=True))
    assert (masked["count"], masked["neginf"], masked["nan"], masked["posinf"]) == (24, 16, 0, 0)
    assert np.isfinite(masked["mean"])
    all_nan = dict(zip(payload.STAT_COLUMNS, stats[labels.index("all_nan")], strict=True))
    assert (all_nan["count"], all_nan["nan"]) == (0, 24) and np.isnan(all_nan["mean"])


def test_heatmap_colours_span_the_values_sequential_or_centred_at_zero():
    view = capture_masked().show()
    labels = [row["label"] for row in view._sites]
    view._selected = labels.index("relu")
    lo, hi = view._heatmap_range
    assert lo == 0 and hi > 0  # ReLU zeros start the scale, not mean - 3 std
    pixels = np.frombuffer(view._heatmap, np.uint8)
    assert pixels.min() == 0
    # Small slices send their exact values for the hover read-out.
    values = np.frombuffer(view._heatmap_values, np.float32).reshape(view._heatmap_shape)
    assert (values >= 0).all() and values.shape == (4, 6)
    view._heatmap_diverging = True
    assert view._heatmap_range == [-hi, hi]
    assert np.frombuffer(view._heatmap, np.uint8).min() == payload.COLOURS // 2  # zero is the middle


def test_an_all_nan_site_gets_no_made_up_colour_scale():
    view = capture_masked().show()
    view._selected = [row["label"] for row in view._sites].index("all_nan")
    assert view._heatmap_range == []
    assert set(np.frombuffer(view._heatmap, np.uint8).tolist()) == {payload.NAN_INDEX}


def test_every_heatmap_request_is_answered_even_when_nothing_changes():
    view = capture_masked().show()
    view._selected = 0
    view._heatmap_request = 1
    assert view._heatmap_answered == 1
    view._heatmap_request = 2  # the same slice again: no new pixels, still an answer
    assert view._heatmap_answered == 2
    view._heatmap_request = 3  # a site without a heatmap answers too
    view._selected = 99
    assert view._heatmap_answered == 3


# -- LiveView ------------------------------------------------------------------


class Perturbed(nnx.Module):
    """A value recorded through ``perturb`` (and its gradient), and a sowed one."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x, t):
        h = jnp.where(t >= 2, jnp.nan, self.linear(x) * 3.0**t)  # non-finite from step 2 on
        h = self.perturb("h", h)
        self.sow(nnx.Intermediate, "act", h)
        return h.sum()


def watched_perturbed_run(steps=4):
    from jaxcapture_nb import watch

    model = Perturbed(nnx.Rngs(0))
    grad = nnx.jit(nnx.grad(lambda m, x, t: m(x, t)))
    with watch(model, grads=True, display=False) as w:
        for t in range(steps):
            grad(model, jnp.ones((2, 4)), jnp.float32(t))
    return w


def test_live_view_names_perturbed_values_activations_and_their_gradients_gradients():
    w = watched_perturbed_run()
    kinds = [(site["label"], site["kind"]) for site in w.view._sites]
    assert sorted(kinds) == [("act", "Intermediate"), ("h", "activation"), ("h", "gradient")]
    assert "Perturbation" not in str(w.view._sites)


def test_live_view_points_at_the_site_and_step_of_the_first_nonfinite_value():
    w = watched_perturbed_run()
    progress = w.view._progress
    assert progress["nonfinite"]["step"] == 2
    site = w.view._sites[progress["nonfinite_site"]]
    # The perturbed value is computed first in the step, so it is flagged first.
    assert (site["label"], site["kind"]) == ("h", "activation")
    series = list(w.stream.series.values())[progress["nonfinite_site"]]
    assert series.steps[: series.size].tolist() == [0, 1, 2, 3]


def test_live_view_before_any_step_has_no_sites_rows_or_rate():
    from jaxcapture_nb.runs.stream import Stream
    from jaxcapture_nb.views.live_view import LiveView

    view = LiveView(Stream(bins=16, include=None, every=1, keep_steps=8, grads=False))
    view.publish()
    assert view._sites == [] and view._progress["recorded"] == 0
    assert not view._progress["rate"] and view._progress["nonfinite_site"] is None
