"""compare_modes() on NNX models that switch modes with a call argument (``model(x, training=True)``)."""

import jax
import numpy as np
import pytest
from flax import nnx
from models import DeterministicArgumentNet, ModeNet, TrainingArgumentNet

from jaxcapture_nb import CompareView, ModeError, compare_modes
from jaxcapture_nb.modes.call_modes import mode_arguments
from jaxcapture_nb.stats.schema import compare_columns
from jaxcapture_nb.views.compare_static import comparison_html

EXAMPLE = "modes={'train': {'training': True}, 'eval': {'training': False}}"


@pytest.fixture
def x():
    return jax.random.normal(jax.random.key(1), (32, 4))


def state_leaves(model):
    """Every leaf of the model's state on the host; RNG keys as their data."""
    keys = jax.dtypes.prng_key

    def host(leaf):
        return np.asarray(jax.random.key_data(leaf) if jax.numpy.issubdtype(leaf.dtype, keys) else leaf)

    return [host(leaf) for leaf in jax.tree.leaves(nnx.state(model))]


def same_state(a, b):
    return len(a) == len(b) and all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))


def zeros(result, site):
    return next(s for s in result.sites if s.site == site).stats[:, compare_columns().index("zero_pct")]


def shifts(result):
    return {s.site: s.shift for s in result.sites}


def test_the_switches_are_found_by_name_with_a_bool_default_or_annotation():
    assert mode_arguments(TrainingArgumentNet(nnx.Rngs(0))) == {"training": True}
    assert mode_arguments(DeterministicArgumentNet(nnx.Rngs(0))) == {"deterministic": False}
    assert mode_arguments(ModeNet(nnx.Rngs(0))) == {}


def test_the_presets_pass_the_call_argument_and_say_so(x):
    result = compare_modes(TrainingArgumentNet(nnx.Rngs(0)), x)
    assert result.call_arguments == {"train": {"training": True}, "eval": {"training": False}}
    moved = shifts(result)
    assert moved["linear.__call__"] == 0.0
    for site in ("bn.__call__", "dropout.__call__", "hidden", "__call__"):
        assert moved[site] > 0.05, site
    # Dropout zeroes half of what ReLU left in training only.
    train_zeros, eval_zeros = zeros(result, "dropout.__call__")
    assert train_zeros > eval_zeros + 15
    assert result.note == (
        "TrainingArgumentNet switches modes with its call argument training=: "
        "the presets pass training=True in train and training=False in eval"
    )
    assert result.table().splitlines()[1] == result.note


def test_a_switch_named_deterministic_is_passed_inverted(x):
    result = compare_modes(DeterministicArgumentNet(nnx.Rngs(0)), x)
    assert result.call_arguments == {"train": {"deterministic": False}, "eval": {"deterministic": True}}
    assert shifts(result)["dropout.__call__"] > 0.05


def test_when_no_mode_passes_the_switch_the_note_names_it_and_how_to_pass_it(x):
    model = TrainingArgumentNet(nnx.Rngs(0))
    # The view options are set, but the call passes its own: nothing shifts.
    view_only = ({"deterministic": False, "use_running_average": False}, "eval")
    given = compare_modes(model, x, training=False)
    by_call = compare_modes(model, call=lambda view: view(x))
    by_views = compare_modes(model, x, modes=view_only[:1] + ({"deterministic": True},))
    for result, why in (
        (given, "which the inputs give every mode as training=False; leave it out of the inputs"),
        (by_call, "which call= passes the same way in every mode; drop call="),
        (by_views, "which these modes leave as it is; pass it in each mode"),
    ):
        assert all(s.same for s in result.sites)
        assert result.note.startswith(
            "every site is the same in all modes: TrainingArgumentNet switches modes with its call "
            "argument training=, "
        )
        assert why in result.note and result.note.endswith(f"e.g. {EXAMPLE}")
        # Every picture of the comparison says it: the text, the saved HTML and the widget.
        assert result.note in result.table()
        assert result.note.replace("'", "&#x27;") in comparison_html(result)
        assert CompareView(result)._note == result.note


def test_modes_given_as_call_arguments(x):
    model = TrainingArgumentNet(nnx.Rngs(0))
    modes = {"train": {"training": True}, "eval": {"training": False}}
    result = compare_modes(model, x, modes=modes)
    assert result.modes == ["train", "eval"] and result.call_arguments == modes
    assert shifts(result)["dropout.__call__"] > 0.05 and result.note == ""
    # The same runs as the presets make.
    assert shifts(result) == shifts(compare_modes(model, x))


def test_a_name_that_is_a_view_option_and_a_call_argument_sets_both(x):
    model = DeterministicArgumentNet(nnx.Rngs(0))
    result = compare_modes(model, x, modes=({"deterministic": False}, {"deterministic": True}))
    assert result.modes == ["deterministic=False", "deterministic=True"]
    assert list(result.call_arguments.values()) == [{"deterministic": False}, {"deterministic": True}]
    train_zeros, eval_zeros = zeros(result, "dropout.__call__")
    assert eval_zeros < 1 and 35 < train_zeros < 65


@pytest.mark.parametrize(
    ("modes", "extra", "message"),
    [
        (
            {"a": {"trainig": True}, "b": {}},
            {},
            r"'trainig' is neither an option of the modules set \(they offer: deterministic, "
            r"use_running_average\) nor a keyword of TrainingArgumentNet.__call__ \(it takes: x, training\)",
        ),
        (
            {"a": {"training": True}, "b": {"training": "no"}},
            {},
            r"mode 'b' gives training='no', but training= switches the mode of TrainingArgumentNet "
            "and takes True or False",
        ),
        (
            {"a": {"training": True}, "b": {"training": False}},
            {"training": True},
            r"mode 'a' sets training=, which the inputs already give to every mode \(training=True\): "
            "leave it out of the inputs",
        ),
        (
            {"a": {"training": True}, "b": {"training": False}},
            {"call": lambda view: view(np.ones((2, 4)))},
            r"mode 'a' passes training= to TrainingArgumentNet.__call__, but call= runs the model",
        ),
    ],
)
def test_bad_call_modes_are_refused_before_anything_runs(x, modes, extra, message):
    model = TrainingArgumentNet(nnx.Rngs(0))
    before = state_leaves(model)
    args = () if "call" in extra else (x,)
    with pytest.raises(ModeError, match=message):
        # update_stats=True would keep what any run changed.
        compare_modes(model, *args, modes=modes, update_stats=True, **extra)
    assert same_state(before, state_leaves(model))


def test_an_argument_given_by_position_counts_as_given(x):
    with pytest.raises(ModeError, match=r"which the inputs already give to every mode \(training=True\)"):
        compare_modes(TrainingArgumentNet(nnx.Rngs(0)), x, True, modes=({"training": True}, {}))


def test_call_argument_modes_leave_batch_statistics_and_rng_counters_as_they_were(x):
    model = TrainingArgumentNet(nnx.Rngs(0))
    before = state_leaves(model)
    compare_modes(model, x)
    compare_modes(model, x, modes={"train": {"training": True}, "eval": {"training": False}})
    assert same_state(before, state_leaves(model))
    compare_modes(model, x, update_stats=True)
    assert not same_state(before, state_leaves(model))
