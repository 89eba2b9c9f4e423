"""overlay_runs(): several runs, live or saved, in one LiveView."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from training import watched_training

from jaxcapture_nb import LiveView, overlay_runs, summarize, watch

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")


class SowingMLP(nnx.Module):
    """A 4-16-1 MLP that sows its hidden activation as ``act``: one site per run."""

    def __init__(self, rngs: nnx.Rngs):
        self.first = nnx.Linear(4, 16, rngs=rngs)
        self.second = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "act", h)
        return self.second(h)


def train(lr, steps=8, log_dir=None, during=None, **options):
    """A watched adam loop at learning rate ``lr`` that logs its loss; returns the Watch.

    ``during(w)`` runs halfway through, while the run is still going.
    """

    def halfway(w, step):
        if during is not None and step == steps // 2:
            during(w)

    x = jax.random.normal(jax.random.key(1), (8, 4))
    y = jnp.ones((8, 1))
    return watched_training(
        SowingMLP(nnx.Rngs(0)),
        optax.adam(lr),
        x,
        y,
        steps=steps,
        after_step=halfway,
        log_dir=log_dir,
        **options,
    )


def decoded(view):
    """The view's last update as (site index, steps) and (scalar index, values) per block."""
    update = view._update
    index = np.frombuffer(update["index"], np.int32).reshape(-1, 3)
    steps = np.frombuffer(update["steps"], np.float64)
    sites, row = {}, 0
    for site, _, n in index:
        sites[int(site)] = steps[row : row + n].tolist()
        row += n
    scalar_index = np.frombuffer(update["scalar_index"], np.int32).reshape(-1, 3)
    triples = np.frombuffer(update["scalar_rows"], np.float64).reshape(-1, 3)  # step, value, wall time
    scalars, row = {}, 0
    for i, _, n in scalar_index:
        scalars[int(i)] = triples[row : row + n, 1].tolist()
        row += n
    return sites, scalars


def test_two_watched_runs_share_a_view_with_each_run_named():
    slow, fast = train(1e-3), train(1e-1)
    view = overlay_runs({"lr=1e-3": slow, "lr=1e-1": fast})
    assert isinstance(view, LiveView)
    assert view._runs == ["lr=1e-3", "lr=1e-1"]
    assert [(s["label"], s["run"]) for s in view._sites] == [("act", 0), ("act", 1)]
    assert view._scalars == [{"label": "loss", "run": 0}, {"label": "loss", "run": 1}]
    sites, scalars = decoded(view)
    assert sites == {0: list(range(8)), 1: list(range(8))}
    assert scalars[0] == pytest.approx([float(v) for v in slow.stream.scalars["loss"].stats[:8, 0]])
    assert scalars[1] != scalars[0]  # the runs' own losses, not one run twice
    progress = view._progress
    assert progress["done"] and [r["seen"] for r in progress["runs"]] == [8, 8]


def test_saved_runs_under_one_directory_open_together(tmp_path):
    train(1e-3, log_dir=tmp_path / "slow")
    train(1e-1, log_dir=tmp_path / "fast")
    view = overlay_runs(tmp_path)
    assert view._runs == ["fast", "slow"]
    assert {s["label"] for s in view._sites} == {"act"}
    assert [s["run"] for s in view._sites] == [0, 1]
    assert view._progress["done"]
    text = repr(view)
    assert "run fast:" in text and "run slow:" in text


def test_a_hundred_saved_runs_keep_one_small_picture(tmp_path):
    """A few runs keep a picture each; many keep one, with a line per run, and the text names them all."""
    for k in range(100):
        with watch(log_dir=tmp_path / f"run{k:03d}", display=False) as w:
            for step in range(3):
                w.update(step, {f"site{i}": summarize(jnp.arange(8.0) * (k + i + step)) for i in range(3)})
                w.log(step=step, loss=1.0 / (k + step + 1))
    view = overlay_runs(tmp_path)
    bundle, _ = view._repr_mimebundle_()
    page = bundle["text/html"]
    assert len(page) < 1_000_000 and page.count("<img") == 1
    assert all(f"run run{k:03d}:" in bundle["text/plain"] for k in range(100))
    few = overlay_runs({run.name: run for run in view.runs[:3]})
    assert few._repr_mimebundle_()[0]["text/html"].count("<img") == 3


def test_a_running_watch_keeps_updating_the_view_of_several_runs(tmp_path):
    train(1e-3, log_dir=tmp_path / "slow")
    views = []
    fast = train(
        1e-1, steps=10, during=lambda w: views.append(overlay_runs({"slow": tmp_path / "slow", "fast": w}))
    )
    (view,) = views
    assert fast.overlays == [view]
    # The watch published its last rows to the view as it ended.
    _, scalars = decoded(view)
    assert view._progress["done"]
    assert view.runs[1].scalars["loss"].size == 10 and view.runs[1].source is fast
    assert view._progress["runs"][1]["seen"] == 10


def test_a_saved_run_takes_the_bins_of_a_watched_one(tmp_path):
    train(1e-3, log_dir=tmp_path / "slow", bins=32)
    fast = train(1e-1, bins=16)
    view = overlay_runs({"fast": fast, "slow": tmp_path / "slow"})
    assert view._bins == 16
    assert view.runs[1].stream.bins == 16


def test_watched_runs_with_different_bins_are_refused():
    with pytest.raises(ValueError, match=r"same number of bins.*a: 16, b: 32.*bins="):
        overlay_runs({"a": train(1e-3, bins=16), "b": train(1e-3, bins=32)})


@pytest.mark.parametrize(
    ("runs", "error", "message"),
    [
        ({}, ValueError, "at least one run"),
        (["a/x", "b/x"], ValueError, "'x' more than once"),
        ({"a": 3}, TypeError, "run 'a': expected a Watch"),
        (42, TypeError, "runs must be"),
    ],
)
def test_bad_runs_name_the_problem(runs, error, message):
    with pytest.raises(error, match=message):
        overlay_runs(runs)


def test_one_run_given_twice_is_refused():
    w = train(1e-3, steps=2)
    with pytest.raises(ValueError, match="'b' is run 'a' again"):
        overlay_runs({"a": w, "b": w})


def test_a_watch_not_yet_started_is_refused():
    w = watch(display=False)
    with pytest.raises(ValueError, match="has not started"):
        overlay_runs({"a": w})


def test_a_view_of_one_run_is_unchanged():
    w = train(1e-2, steps=4)
    assert w.view._runs == []
    assert w.view._progress["runs"] == []
    assert [s["run"] for s in w.view._sites] == [0]


def test_publishing_from_two_threads_at_once_loses_no_rows():
    # The overlay view is published by the watch's thread while the
    # notebook's thread may publish it too.
    w = train(1e-2, steps=4)
    view = overlay_runs({"a": w, "b": train(1e-3, steps=4)})
    threads = [threading.Thread(target=view.publish) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    view.publish(final=True)
    sites, _ = decoded(view)
    assert sites == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}


def test_a_logged_inf_before_any_site_is_flagged_with_its_scalar():
    import math

    from jaxcapture_nb import summarize

    with watch(display=False) as w:
        for step in range(6):
            values = jnp.ones(4) if step < 4 else jnp.full(4, jnp.nan)
            w.update(step, {"x": summarize(values)})
            w.log(step=step, loss=math.inf if step >= 2 else 1.0)
    assert w.stream.first_nonfinite == ("loss", 2)
    assert w.stream.scalars["loss"].stats[2, 0] == math.inf  # not saturated to float32's largest
    progress = w.view._progress
    assert progress["nonfinite_scalar"] == 0 and progress["nonfinite_site"] is None
    assert progress["nonfinite"] == {"site": "loss", "step": 2, "run": 0}


def test_a_site_and_a_scalar_at_the_same_step_flag_the_site():
    import math

    from jaxcapture_nb import summarize

    with watch(display=False) as w:
        for step in range(3):
            w.update(step, {"x": summarize(jnp.full(4, jnp.nan if step == 1 else 1.0))})
            w.log(step=step, loss=math.nan if step == 1 else 1.0)
    assert w.stream.first_nonfinite == ("x", 1)
    assert w.view._progress["nonfinite_site"] == 0 and w.view._progress["nonfinite_scalar"] is None


def browser_rows(view):
    """The steps of site 0 that the browser holds, rebuilt from every update as live_state.js applies them."""
    held = {}

    def apply(change):
        update = change["new"]
        if update["base"]:
            held.clear()
        index = np.frombuffer(update["index"], np.int32).reshape(-1, 3)
        steps = np.frombuffer(update["steps"], np.float64)
        row = 0
        for site, drop, n in index:
            rows = held.setdefault(int(site), [])
            del rows[len(rows) - drop :]
            rows += steps[row : row + n].tolist()
            row += n

    view.observe(apply, names="_update")
    return held


def test_two_views_of_one_thinned_stream_both_get_its_rewritten_rows(monkeypatch):
    # keep_steps=4 thins the history; the latest row is then rewritten in
    # place at every off-grid step. Each view must learn of every rewrite,
    # not only the first view to publish after it.
    from jaxcapture_nb import summarize
    from jaxcapture_nb.views import live_view

    monkeypatch.setattr(live_view, "BASE_SECONDS", 0.0)  # deltas from the first update on
    with watch(display=False, publish="loop", keep_steps=4, bins=8) as w:
        w.update(0, {"x": summarize(jnp.zeros(3), bins=8)})
        overlay = overlay_runs({"a": w, "b": train(1e-3, steps=2, bins=8)})
        held = browser_rows(w.view), browser_rows(overlay)
        for step in range(1, 11):
            w.update(step, {"x": summarize(jnp.full(3, float(step)), bins=8)})
            w.stream.settle()
            w.view.publish()
            overlay.publish()
        series = next(iter(w.stream.series.values()))
        kept = series.steps[: series.size].tolist()
        assert held[0][0] == kept
        assert held[1][0] == kept
