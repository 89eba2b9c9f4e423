"""compare_modes(): the same inputs through each mode, site by site, on real Flax models."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from models import LinenModeNet, ModeNet, Scaled

from jaxcapture_nb import ModeError, compare_modes


@pytest.fixture
def model():
    return ModeNet(nnx.Rngs(0))


@pytest.fixture
def x():
    return jax.random.normal(jax.random.key(1), (16, 3, 4))


def state_leaves(model):
    def host(leaf):
        is_key = jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)
        return np.asarray(jax.random.key_data(leaf) if is_key else leaf)

    return [host(leaf) for leaf in jax.tree.leaves(nnx.state(model))]


def same_state(a, b):
    return len(a) == len(b) and all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))


def test_sites_are_sorted_by_shift_and_the_mode_dependent_layers_lead(model, x):
    result = compare_modes(model, x)
    shifts = [s.shift for s in result.sites]
    assert shifts == sorted(shifts, reverse=True) and shifts[0] > 0.1
    by_site = {s.site: s for s in result.sites}
    # The linear layer comes before any mode-dependent layer: identical in both modes.
    assert by_site["linear.__call__"].shift == 0.0
    for site in ("bn.__call__", "dropout.__call__", "scaled.__call__", "hidden"):
        assert by_site[site].shift > 0.05, site
    assert result.modes == ["train", "eval"] and by_site["hidden"].hists.shape == (2, result.bins)
    # Dropout zeroes about half the values in training only.
    zeros = by_site["dropout.__call__"].stats[:, 4]
    assert 35 < zeros[0] < 65 and zeros[1] < 1


def test_views_name_sites_as_the_capture_view_does(model, x):
    labels = {s.site: s.label for s in compare_modes(model, x).sites}
    assert labels["dropout.__call__"] == "dropout (output)"
    assert labels["hidden"] == "hidden"
    assert labels["__call__"] == "model output"


def test_a_site_called_twice_is_named_as_watch_names_it(x):
    class Twice(nnx.Module):
        def __init__(self, rngs):
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            h = self.dropout(self.dropout(x))
            self.sow(nnx.Intermediate, "h", h)
            self.sow(nnx.Intermediate, "h", 2 * h)
            return h

    sites = {s.site: s.label for s in compare_modes(Twice(nnx.Rngs(0)), x).sites}
    # The first value keeps the plain name, the k-th after it is name[k]:
    # the places in Flax's tuple of the site's values.
    assert sites == {
        "dropout.__call__": "dropout (output)",
        "dropout.__call__[1]": "dropout (output[1])",
        "h": "h",
        "h[1]": "h[1]",
        "__call__": "model output",
    }


def test_train_runs_leave_batch_statistics_and_rng_counters_as_they_were(model, x):
    before = state_leaves(model)
    compare_modes(model, x, modes=("train", "eval", {"deterministic": False}))
    assert same_state(before, state_leaves(model))
    compare_modes(model, x, update_stats=True)
    assert not same_state(before, state_leaves(model))


def test_each_mode_starts_from_the_same_state(model, x):
    # Two train runs see the same RNG counters, so Dropout draws the same mask.
    result = compare_modes(model, x, modes={"first": "train", "second": "train"})
    assert all(s.shift == 0.0 for s in result.sites)


def test_a_failing_run_leaves_the_model_as_it_was(model, x):
    before = state_leaves(model)

    def call(view):
        view(x)
        if view.dropout.deterministic:
            raise RuntimeError("eval run fails")

    with pytest.raises(RuntimeError, match="eval run fails"):
        compare_modes(model, call=call)
    assert same_state(before, state_leaves(model))


def test_more_than_two_modes_and_dicts_of_options(model, x):
    modes = ("eval", {"deterministic": True, "use_running_average": False}, "train")
    result = compare_modes(model, x, modes=modes)
    assert result.modes == ["eval", "deterministic=True, use_running_average=False", "train"]
    hidden = next(s for s in result.sites if s.site == "hidden")
    assert hidden.stats.shape == (3, 6) and hidden.hists.shape == (3, result.bins)
    assert hidden.shifts[0] == 0.0 and np.all(hidden.shifts[1:] > 0)


def test_the_shift_is_the_earth_movers_distance_in_pooled_standard_deviations(x):
    model = Scaled()  # training doubles its input
    result = compare_modes(model, x.reshape(-1), modes=("eval", "train"), bins=256)
    (site,) = result.sites
    values = np.asarray(x).ravel()
    # Sorted samples pair up exactly: W1(x, 2x) = mean |x|.
    expected = np.abs(values).mean() / math.sqrt((values.std() ** 2 + (2 * values.std()) ** 2) / 2)
    assert site.shift == pytest.approx(expected, abs=0.02)


def test_an_invalid_mode_is_a_mode_error_before_anything_runs(model, x):
    with pytest.raises(ModeError, match="give batch_size= and max_length="):
        compare_modes(model, x, modes=("eval", {"decode": True}))
    with pytest.raises(ValueError, match=r"two or more modes .* e\.g\. modes=\('train', 'eval'\)"):
        compare_modes(model, x, modes=("eval",))
    with pytest.raises(ModeError, match=r"a mode is 'train', 'eval' or a dict .*, got 3 \(int\)"):
        compare_modes(model, x, modes=("eval", 3))
    with pytest.raises(ModeError, match=r"a view given as a mode needs a label: .*modes=\{'as is': \{\}"):
        compare_modes(model, x, modes=("eval", model))


def test_linen_modes_are_call_arguments():
    module = LinenModeNet()
    x = jax.random.normal(jax.random.key(2), (16, 4))
    variables = module.init(jax.random.key(0), x, train=False)
    modes = {
        "train": {"train": True, "mutable": ["batch_stats"], "rngs": {"dropout": jax.random.key(3)}},
        "eval": {"train": False},
    }
    result = compare_modes(module, variables, x, modes=modes)
    by_site = {s.site: s for s in result.sites}
    assert by_site["Dense_0.__call__"].shift == 0.0 and by_site["hidden"].shift > 0.1
    _, updates = result.outputs["train"]
    assert "batch_stats" in updates
    with pytest.raises(TypeError, match="Linen modules take their modes as call arguments"):
        compare_modes(module, variables, x)
    with pytest.raises(TypeError, match="call= and update_stats= apply to NNX models"):
        compare_modes(module, variables, x, modes=modes, update_stats=True)


def test_the_text_table_is_deterministic(model, x):
    first = compare_modes(model, x).table()
    assert first == compare_modes(model, x).table()
    assert first.splitlines()[1].split() == [
        "site",
        "shift",
        "mean",
        "[train]",
        "std",
        "[train]",
        "mean",
        "[eval]",
        "std",
        "[eval]",
    ]


def test_shared_histograms_bin_values_across_the_whole_float32_range():
    from jaxcapture_nb.modes.comparison import _shared_histograms

    wide = jnp.array([3e38, -3e38, 1.0])
    hists, lo, hi = _shared_histograms((wide, jnp.full(3, 3e38)), 4)
    assert hists.tolist() == [[1, 0, 1, 1], [0, 0, 0, 3]]
    assert np.isfinite([float(lo), float(hi)]).all()
