"""compare_runs(): two training runs side by side at one step, with compare_modes' shift and widget."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from models import HiddenAndOutputMLP
from training import watched_training

from jaxcapture_nb import CompareView, Comparison, compare_runs, open_run, watch
from jaxcapture_nb.runs.compare_runs import NO_SHAPE, rebinned
from jaxcapture_nb.views.compare_static import comparison_html
from jaxcapture_nb.views.compare_view import comparison_state


def train(learning_rate: float, steps: int = 12, every: int = 1):
    """A watched run of ``steps`` steps; the same data and start for every learning rate."""
    x = jax.random.normal(jax.random.key(1), (32, 4))
    y = jnp.sin(x.sum(axis=1, keepdims=True))
    return watched_training(
        HiddenAndOutputMLP(nnx.Rngs(0)), optax.sgd(learning_rate), x, y, steps=steps, every=every
    )


@pytest.fixture(scope="module")
def runs():
    return train(1e-3), train(0.1)


def test_runs_that_part_are_sorted_by_shift_and_identical_runs_do_not_shift(runs):
    slow, fast = runs
    comparison = compare_runs({"lr 1e-3": slow, "lr 0.1": fast})
    assert isinstance(comparison, Comparison) and comparison.modes == ["lr 1e-3", "lr 0.1"]
    assert comparison.settings == {"lr 1e-3": "step 11", "lr 0.1": "step 11"}
    assert {s.site for s in comparison.sites} == {"hidden", "out"}
    shifts = [s.shift for s in comparison.sites]
    assert shifts == sorted(shifts, reverse=True) and shifts[0] > 0.05
    # Each run's statistics are its own row's at that step.
    out = next(s for s in comparison.sites if s.site == "out")
    for m, run in enumerate(runs):
        series = next(s for s in run.stream.series.values() if s.label == "out")
        row = dict(zip(series.columns, series.stats[series.size - 1], strict=True))
        assert out.stats[m, 0] == pytest.approx(row["mean"]) and out.stats[m, 1] == pytest.approx(row["std"])
        assert out.hists[m].sum() == 32  # every value, on the shared range
    assert out.lo <= min(out.stats[:, 2]) and out.hi >= max(out.stats[:, 3])
    assert out.shapes == [(32, 1), (32, 1)]

    same = compare_runs([slow, slow], step=5)
    assert same.modes == ["run 1", "run 2"] and all(s.shift == 0 for s in same.sites)


def test_at_step_0_the_runs_have_not_parted_yet(runs):
    # Same start, same data: the first forward pass is the same in both runs.
    at_start = compare_runs(list(runs), step=0)
    assert all(s.shift == pytest.approx(0.0, abs=1e-6) for s in at_start.sites)
    later = compare_runs(list(runs), step=11)
    assert max(s.shift for s in later.sites) > max(s.shift for s in at_start.sites)


def test_a_run_recorded_every_few_steps_is_compared_at_its_latest_row(runs):
    thinned = train(1e-3, every=4)  # rows at steps 0, 4 and 8
    comparison = compare_runs([runs[0], thinned], step=10)
    hidden = next(s for s in comparison.sites if s.site == "hidden")
    series = next(s for s in thinned.stream.series.values() if s.label == "hidden")
    row = dict(zip(series.columns, series.stats[2], strict=True))
    assert series.steps[2] == 8 and hidden.stats[1, 0] == pytest.approx(row["mean"])
    # The comparison names its step and says that some rows come from before it.
    assert comparison.note == "compared at step 10: each site's latest row at or before it, from steps 8–10"
    assert compare_runs(list(runs), step=5).note == "compared at step 5"


def test_a_comparison_of_runs_speaks_of_runs_and_of_shapes_a_log_does_not_keep(runs, tmp_path):
    live = runs[0]
    model = HiddenAndOutputMLP(nnx.Rngs(0))
    with watch(model, log_dir=tmp_path, display=False, steps="calls") as w:
        for i in range(3):
            model(jnp.ones((32, 4)))
            w.log(step=i)
    comparison = compare_runs({"live": live, "saved": open_run(tmp_path)}, step=2)
    assert comparison.noun == "run" and comparison.same_text == "same in all runs"
    table = comparison.table()
    assert table.splitlines()[:2] == [
        "shift: earth mover's distance to the first run's histogram, in pooled standard deviations",
        "compared at step 2",
    ]
    assert "mode" not in table
    hidden = next(s for s in comparison.sites if s.site == "hidden")
    # A live run and a saved one name their sites alike: each site is in both, with a shift.
    assert hidden.shapes == [(32, 16), NO_SHAPE] and hidden.shift > 0
    assert len(comparison.sites) == 2
    html = comparison_html(comparison)
    assert "first run&#x27;s histogram" in html and "compared at step 2" in html and " mode" not in html
    state = comparison_state(comparison)
    assert state["_noun"] == "run"
    assert next(s for s in state["_sites"] if s["site"] == "hidden")["shapes"] == [[32, 16], NO_SHAPE]


def test_the_comparison_shows_in_compare_modes_widget(runs):
    view = compare_runs(list(runs)).show()
    assert isinstance(view, CompareView)
    assert "shift" in repr(compare_runs(list(runs)))


def test_rebinning_keeps_every_count_and_places_it_by_overlap():
    hist = np.array([3, 0, 5, 2])
    spread = rebinned(hist, -1.0, 1.0, -2.0, 2.0, 8)
    assert spread.sum() == pytest.approx(10) and spread[:2].sum() == 0 and spread[-2:].sum() == 0
    assert rebinned(hist, -1.0, 1.0, -1.0, 1.0, 4).tolist() == hist.tolist()


def test_bad_runs_are_refused_with_what_to_pass(runs):
    with pytest.raises(ValueError, match="two runs or more"):
        compare_runs([runs[0]])
    with pytest.raises(TypeError, match="expected a Watch, its LiveView, a Run, or the path of a saved run"):
        compare_runs([runs[0], 3])
    with pytest.raises(FileNotFoundError):
        compare_runs([runs[0], "no/such/run"])
    with watch(display=False) as empty:
        pass
    with pytest.raises(ValueError, match="no step yet"):
        compare_runs([runs[0], empty])


def test_saved_runs_compare_by_path_or_by_their_folder(tmp_path):
    for name in ("slow", "fast"):
        model = HiddenAndOutputMLP(nnx.Rngs(0))
        with watch(model, log_dir=tmp_path / name, display=False) as w:
            for step in range(3):
                model(jnp.full((8, 4), 1.0 if name == "slow" else 3.0))
                w.log(step=step)
    by_folder = compare_runs(tmp_path)
    assert by_folder.modes == ["fast", "slow"] and {s.site for s in by_folder.sites} == {"hidden", "out"}
    by_path = compare_runs([tmp_path / "slow", tmp_path / "fast"], step=2)
    assert by_path.modes == ["slow", "fast"] and max(s.shift for s in by_path.sites) > 0
