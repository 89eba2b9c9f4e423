"""PatchingView's kernel side: what it sends, how it orders sites, its saved picture and its text; and the sweep's readout."""

import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import traitlets
from flax import nnx
from tolerances import assert_float32_close

from jaxcapture_nb import PatchingResult, attribution_patching, patch, patching_sweep
from jaxcapture_nb.jupyter.server_extension import MARK
from jaxcapture_nb.views.patching_static import colour_scale, patching_html
from jaxcapture_nb.views.patching_view import PatchingView, aligned, patching_state


class ThreeLayerMixer(nnx.Module):
    """Residual layers that each mix in the tokens before, so a patch at one position moves the last."""

    def __init__(self, rngs):
        self.embed = nnx.Embed(5, 8, rngs=rngs)
        self.layers = nnx.List([nnx.Linear(8, 8, rngs=rngs) for _ in range(3)])
        self.unembed = nnx.Linear(8, 5, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + nnx.gelu(layer(jnp.cumsum(x, axis=1) / 3))
        return self.unembed(x)


CLEAN, CORRUPTED = jnp.array([[1, 2, 3, 4, 0, 2]]), jnp.array([[3, 2, 3, 4, 0, 2]])
SITES = [f"layers.{i}.__call__" for i in range(3)]


def metric(logits):
    return logits[0, -1, 1] - logits[0, -1, 3]


def last_probabilities(logits):
    return jax.nn.softmax(logits[0, -1])


@pytest.fixture(scope="module")
def results():
    model = ThreeLayerMixer(nnx.Rngs(0))
    backwards = SITES[::-1]  # given out of model order
    exact = patching_sweep(
        model, CLEAN, CORRUPTED, metric, backwards, positions=range(6), readout=last_probabilities
    )
    estimate = attribution_patching(model, CLEAN, CORRUPTED, metric, backwards, positions=range(6))
    return model, exact, estimate


def test_sweeps_list_sites_in_model_order_and_keep_each_patched_runs_readout(results):
    model, exact, estimate = results
    assert exact.sites == SITES and estimate.sites == SITES
    assert exact.readouts.shape == (3, 6, 5) and exact.readout_labels == ["0", "1", "2", "3", "4"]
    # Each readout is the patched run's, as patching by hand gives it.
    clean_values = {}
    for site in SITES:
        with patch(model, {site: lambda v, s=site: clean_values.setdefault(s, v)}):
            model(CLEAN)
    with patch(
        model, {"layers.1.__call__": lambda v: v.at[:, 4].set(clean_values["layers.1.__call__"][:, 4])}
    ):
        by_hand = model(CORRUPTED)
    assert_float32_close(exact.readouts[1, 4], last_probabilities(by_hand))
    assert_float32_close(exact.effect[1, 4], metric(by_hand))
    assert_float32_close(exact.clean_readout, last_probabilities(model(CLEAN)))
    assert_float32_close(exact.corrupted_readout, last_probabilities(model(CORRUPTED)))


def test_the_view_sends_numbers_as_buffers_its_estimate_aligned_to_the_results_sites(results):
    _, exact, estimate = results
    # The estimate's rows in another order: the view puts them in the result's.
    shuffled = PatchingResult(
        estimate.sites[::-1],
        estimate.positions,
        estimate.effect[::-1],
        estimate.clean,
        estimate.corrupted,
        "attribution",
        metric_name=estimate.metric_name,
    )
    view = PatchingView(exact, shuffled)
    assert [m["metric"] for m in view._methods] == ["metric", "metric"]  # the metric function's name
    assert view.shown == "both" and view.selected == []
    assert view._scale == colour_scale(view._results)  # the widget's colours are the saved picture's
    assert view._sites == SITES and view._positions == [str(p) for p in range(6)]
    assert [m["method"] for m in view._methods] == ["exact", "attribution"]
    effects = np.frombuffer(view._effects).reshape(2, 3, 6)
    np.testing.assert_array_equal(effects[0], exact.effect)
    np.testing.assert_array_equal(effects[1], estimate.effect)
    np.testing.assert_array_equal(np.frombuffer(view._readouts).reshape(3, 6, 5), exact.readouts)
    ends = np.frombuffer(view._readout_ends).reshape(2, 5)
    np.testing.assert_array_equal(ends, [exact.clean_readout, exact.corrupted_readout])
    assert repr(view) == exact.table() + "\n\n" + estimate.table()  # the estimate's rows in model order


def test_the_view_refuses_what_it_cannot_show(results):
    _, exact, estimate = results
    fewer = PatchingResult(SITES[:2], range(6), estimate.effect[:2], 1.0, 0.0, "attribution")
    with pytest.raises(ValueError, match="other sites or positions than the result"):
        PatchingView(exact, fewer)
    alone = PatchingView(exact)
    assert alone.shown == "exact" and alone._readout_labels == ["0", "1", "2", "3", "4"]
    with pytest.raises(traitlets.TraitError, match="needs an estimate"):
        alone.shown = "both"
    with pytest.raises(traitlets.TraitError, match="shows exact; shown='attribution' is not one"):
        alone.shown = "attribution"
    with pytest.raises(ValueError, match="2 labels for a readout of 5"):
        PatchingResult(
            SITES,
            range(6),
            exact.effect,
            1.0,
            0.0,
            "exact",
            (exact.readouts, np.ones(5), np.ones(5)),
            ["a", "b"],
        )


def test_the_saved_picture_is_a_coloured_table_per_result(results):
    _, exact, estimate = results
    page = patching_html([exact, estimate])
    assert page.count('<table class="jcnb-patching-static">') == 2
    assert page.count("<caption>exact patching") == 1 and page.count("<caption>attribution patching") == 1
    cells = re.findall(r'<td style="background:(#[0-9a-f]{6});color:#[0-9a-f]{3}">([^<]*)</td>', page)
    assert len(cells) == 2 * 3 * 6
    # Recovery 1 (the clean run) is red, 0 white-ish, what it says is the number.
    first_table = cells[:18]
    values = [float(text) for _, text in first_table]
    np.testing.assert_allclose(values, np.round(exact.recovery.ravel(), 2))
    reds = [int(colour[1:3], 16) - int(colour[5:7], 16) for colour, _ in first_table]
    assert np.corrcoef(reds, values)[0, 1] > 0.9
    assert patching_html([exact, estimate]) == page  # deterministic for nbval
    bundle = PatchingView(exact, estimate)._repr_mimebundle_()
    assert bundle[0]["text/html"] == page and bundle[0]["text/plain"] == repr(PatchingView(exact, estimate))
    assert MARK in bundle[1]  # saved notebooks keep the picture in place of the widget


def test_positions_take_labels_in_the_view_the_table_and_the_saved_picture():
    result = PatchingResult(
        ["a", "b"], [1, 3], [[1.0, 2.0], [0.0, 2.0]], 2.0, 0.0, "exact", position_labels=["the", "sat"]
    )
    estimate = PatchingResult(["b", "a"], [1, 3], [[1.0, 1.0], [0.0, 2.0]], 2.0, 0.0, "attribution")
    assert patching_state(aligned(result, estimate))["_position_labels"] == ["the", "sat"]
    assert aligned(result, estimate)[1].position_labels == ["the", "sat"]
    assert result.table().splitlines()[1].split() == ["site", "1:the", "3:sat"]
    assert "<th>1 the</th><th>3 sat</th>" in patching_html([result])
    # One label per position of the input serves too; a count that fits neither is refused.
    assert PatchingResult(
        ["a"], [1, 3], [[0.0, 1.0]], 1.0, 0.0, "exact", position_labels="abcd"
    ).position_labels == ["b", "d"]
    with pytest.raises(ValueError, match="labels has 3 labels: give one per patched position \\(2\\)"):
        PatchingResult(["a"], [1, 3], [[0.0, 1.0]], 1.0, 0.0, "exact", position_labels="abc")
    with pytest.raises(ValueError, match="patched each site whole"):
        PatchingResult(["a"], None, [[0.0]], 1.0, 0.0, "exact", position_labels=["x"])


def test_a_sweep_at_the_end_of_a_cell_shows_as_its_view(results):
    _, exact, _ = results
    data, metadata = exact._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/html"] == patching_html([exact]) and data["text/plain"] == exact.table()
    assert MARK in metadata


def test_a_result_shows_as_text_in_a_plain_python_process():
    script = """
import jax.numpy as jnp
from jaxcapture_nb import PatchingResult
result = PatchingResult(["b.__call__", "a.__call__"], [0, 1], [[1.0, 2.0], [0.0, 2.0]], 2.0, 0.0, "exact")
print(repr(result.show()))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "exact patching: recovery (0 = corrupted 0, 1 = clean 2)",
        "site              0        1",
        "b.__call__    0.500    1.000",
        "a.__call__    0.000    1.000",
    ]
