"""watch(): streaming summaries out of an unchanged nnx.jit step."""

import sys
import threading
import time
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from models import Block, PerturbedMLP, Stack

from jaxcapture_nb import Gradient, JaxCaptureWarning, NonFiniteError, capture, summarize, watch
from jaxcapture_nb.runs.rows import row_stats
from jaxcapture_nb.runs.series import SiteSeries
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.runs.watch import PUBLISH_SECONDS
from jaxcapture_nb.stats.summarize import packed_summary
from jaxcapture_nb.stats.summary import unpack_summary


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def make_step(traces, lr=0.0):
    @nnx.jit
    def train_step(model, optimizer, x, y):
        traces.append(1)
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return loss

    return train_step


@pytest.fixture
def setup():
    model = PerturbedMLP(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (8, 4))
    y = jnp.ones((8, 1))
    return model, nnx.Optimizer(model, optax.sgd(0.0), wrt=nnx.Param), x, y


def row(series, k, column):
    return float(series.stats[k, series.columns.index(column)])


def test_an_unchanged_jitted_step_is_traced_once_and_streams_every_call(setup):
    model, optimizer, x, y = setup
    traces = []
    step = make_step(traces)
    with watch(model, display=False) as w:
        for _ in range(12):
            step(model, optimizer, x, y)
    # Rows leave each call and never come back in: one trace, reused by every call.
    assert len(traces) == 1
    act = w.stream.series[((), "Intermediate", "act")]
    assert w.stream.steps_seen == 12 and act.size == 12
    assert act.steps[:12].tolist() == list(range(12))
    # lr=0: every step sees the same activations as the eager model.
    want = model.hidden(x)
    assert row(act, 11, "mean") == pytest.approx(float(want.mean()), rel=1e-5)
    assert row(act, 11, "max") == pytest.approx(float(want.max()), rel=1e-5)
    assert act.hists[11].sum() == want.size
    assert "__captures__" not in vars(model)


def test_the_loop_hands_rows_over_without_reading_them(setup, monkeypatch):
    model, optimizer, x, y = setup
    step = make_step([])
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 3600.0)  # no background reads
    with watch(model, display=False) as w:
        for _ in range(5):
            step(model, optimizer, x, y)
        act = w.stream.series[((), "Intermediate", "act")]
        # Counted as each call returned, but not one row read from the device yet.
        assert (w.stream.steps_seen, act.size) == (5, 0)
        w.stream.settle()
        assert act.size == 5


def test_a_copy_of_the_watched_state_rebuilt_later_records_nothing(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, display=False):
        step(model, optimizer, x, y)
        kept = nnx.state(model)  # holds the sinks and the rows of the last call
    with capture(model) as cap:
        jax.tree.map(lambda leaf: leaf, kept)  # rebuilds the sinks around concrete rows
        model(x)
    assert [r.site for r in cap.records] == ["act"]


def slow_matmuls(x, iterations=300):
    """About a second of device work on a CPU: still running long after the call returns."""
    return jax.lax.fori_loop(0, iterations, lambda _, a: jnp.tanh(a @ a) / 16, x)


def test_the_background_settle_records_finished_steps_in_order_and_leaves_the_rest(monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 3600.0)  # settled by hand here
    x = jax.random.normal(jax.random.key(0), (512, 512))
    slow = jax.jit(lambda x: summarize(slow_matmuls(x), bins=16))
    jax.block_until_ready(slow(x))  # compiled
    done = jax.block_until_ready(jax.jit(lambda x: summarize(x, bins=16))(x))
    with watch(bins=16, display=False) as w:
        pending = slow(x)
        w.update(0, done)
        w.update(1, pending)
        w.update(2, done)
        w.stream.settle(wait=False)
        assert not pending.counts.is_ready()  # a second of work: the settle saw it running
        value = w.stream.series[("update", "value")]
        # Step 2 is finished too, but waits behind step 1 so rows keep their order.
        assert value.steps[: value.size].tolist() == [0]
        w.stream.settle()
        assert value.steps[: value.size].tolist() == [0, 1, 2]


def test_rows_of_a_step_still_running_wait_for_a_later_settle(monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 3600.0)

    class Slow(nnx.Module):
        def __call__(self, x, iterations):
            y = slow_matmuls(x, iterations)
            self.sow(nnx.Intermediate, "y", y)
            return y

    model = Slow()
    x = jax.random.normal(jax.random.key(0), (512, 512))
    step = nnx.jit(lambda model, x, iterations: model(x, iterations), static_argnums=2)
    with watch(model, display=False, steps="calls") as w:
        for iterations in (1, 1, 300, 1):
            out = step(model, x, iterations)
        w.stream.settle(wait=False)
        assert not out.is_ready()  # the last call waits for the slow third one
        y = w.stream.series[((), "Intermediate", "y")]
        # All four calls returned their rows; only the two quick ones before
        # the slow call were recorded.
        assert (w.stream.steps_seen, y.size) == (4, 2)
        w.stream.settle()
        assert y.size == 4


def test_a_settle_that_does_not_wait_leaves_the_summaries_it_starts_for_the_next(setup, monkeypatch):
    # A loop that publishes settles between its own steps: waiting for a
    # summary queued behind the step just dispatched would cost it that step.
    # Here every summary takes a second of device work.
    from jaxcapture_nb.stats.step_table import StepTable

    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 3600.0)
    packed, busy = StepTable.packed, jax.random.normal(jax.random.key(0), (512, 512))

    def slow_packed(self, bins, layout=None):
        rows = packed(self, bins, layout)
        rows.rows = rows.rows + (slow_matmuls(busy)[0, 0] > 1).astype(
            rows.rows.dtype
        )  # adds 0, a second later
        return rows

    monkeypatch.setattr(StepTable, "packed", slow_packed)
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, display=False) as w:
        jax.block_until_ready(step(model, optimizer, x, y))
        w.stream.settle(wait=False)
        act = w.stream.series[((), "Intermediate", "act")]
        assert (w.stream.steps_seen, act.size) == (1, 0)  # its summary started, and left running
        w.stream.settle()
        assert act.size == 1
    assert row(act, 0, "mean") == pytest.approx(float(model.hidden(x).mean()), rel=1e-5)


def summarized_calls(monkeypatch):
    """For every call of a compiled step that hands over a table, whether its summaries were made.

    A recorded step's summaries may be made later, as the stream settles,
    so each is matched to its call by the table it summarizes.
    """
    from jaxcapture_nb.runs.stream import Stream
    from jaxcapture_nb.stats.step_table import StepTable

    calls: list[bool] = []
    call_of: dict[int, int] = {}
    tables: list[StepTable] = []  # kept alive, so that ids stay unique
    add_table, packed = Stream._add_table, StepTable.packed

    def note_call(self, table, *args):
        call_of[id(table)] = len(calls)
        tables.append(table)
        calls.append(False)
        add_table(self, table, *args)

    def note_summaries(self, bins, layout=None):
        calls[call_of[id(self)]] = True
        return packed(self, bins, layout)

    monkeypatch.setattr(Stream, "_add_table", note_call)
    monkeypatch.setattr(StepTable, "packed", note_summaries)
    return calls


def test_every_records_one_step_in_n_and_summarizes_only_those(setup, monkeypatch):
    model, optimizer, x, y = setup
    traces = []
    step = make_step(traces)
    summarized = summarized_calls(monkeypatch)
    with watch(model, every=5, display=False) as w:
        for _ in range(23):
            step(model, optimizer, x, y)
    assert len(traces) == 1  # the step is the same program whether it is recorded or not
    act = w.stream.series[((), "Intermediate", "act")]
    assert w.stream.steps_seen == 23
    assert act.steps[: act.size].tolist() == [0, 5, 10, 15, 20]
    # Only the recorded calls' tables were summarized.
    assert len(summarized) == 23
    assert [k for k, made in enumerate(summarized) if made] == [0, 5, 10, 15, 20]
    # The recorded rows are the real summaries: lr=0, so each equals the first.
    want = model.hidden(x)
    assert row(act, 4, "mean") == pytest.approx(float(want.mean()), rel=1e-5)
    assert act.hists[4].sum() == want.size


def test_a_step_summarizes_all_its_sites_in_one_batch(setup, monkeypatch):
    from jaxcapture_nb.backends.nnx import levels

    model, optimizer, x, y = setup
    batches = []
    pack = levels.pack

    def spy(entries, *args, **kwargs):
        batches.append(len(entries))
        return pack(entries, *args, **kwargs)

    monkeypatch.setattr(levels, "pack", spy)
    step = make_step([])
    with watch(model, methods=True, display=False) as w:
        for _ in range(3):
            step(model, optimizer, x, y)
    # act, and the outputs of first, second, hidden and __call__: sowed at
    # one level of the step's one trace, so summarized together, once.
    assert batches == [5]
    assert {s.label for s in w.stream.series.values()} == {
        "act",
        "first.__call__",
        "second.__call__",
        "hidden",
        "__call__",
    }
    assert all(s.size == 3 for s in w.stream.series.values())


def test_every_counts_the_steps_of_one_watch_from_zero_and_reuses_the_compiled_step(setup, monkeypatch):
    model, optimizer, x, y = setup
    traces = []
    step = make_step(traces)
    for calls in (4, 7):
        with watch(model, every=3, display=False) as w:
            for _ in range(calls):
                step(model, optimizer, x, y)
        act = w.stream.series[((), "Intermediate", "act")]
        assert act.steps[: act.size].tolist() == list(range(0, calls, 3))
    assert len(traces) == 1
    with watch(model, every=1, display=False) as w:  # another policy: its own program
        step(model, optimizer, x, y)
    assert len(traces) == 2


def test_every_thins_on_the_host_what_a_step_over_a_submodule_sends(setup):
    model, optimizer, x, y = setup
    hidden = nnx.jit(lambda first, x: first(x))

    class Outer(nnx.Module):
        def __init__(self):
            self.inner = PerturbedMLP(nnx.Rngs(0))

    outer = Outer()
    with watch(outer, every=4, display=False, steps="calls") as w:
        for _ in range(10):
            outer.inner(x)  # eager sows
            hidden(outer.inner.first, x)  # a step that does not take the watched model in
    act = w.stream.series[(("inner",), "Intermediate", "act")]
    assert w.stream.steps_seen == 10 and act.steps[: act.size].tolist() == [0, 4, 8]


def test_the_ring_is_bounded_and_thins_old_steps(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    sizes = []
    with watch(model, keep_steps=16, display=False) as w:
        for i in range(200):
            step(model, optimizer, x, y)
            if i in (60, 199):
                jax.effects_barrier()
                sizes.append(w.stream.nbytes())
    act = w.stream.series[((), "Intermediate", "act")]
    steps = act.steps[: act.size]
    assert act.size <= 16 and steps[-1] == 199
    # Old steps are thinned evenly, not dropped: the rows still span the run.
    assert steps[0] == 0 and np.all(np.diff(steps[:-1]) == steps[1] - steps[0])
    assert sizes[0] == sizes[1]  # memory flat once the ring is full


def test_every_kept_row_holds_its_own_step_after_a_long_unread_stretch():
    # Hundreds of steps queued before one settle are recorded in parts; a
    # part may end on a step the next one replaces. Each kept row must still
    # hold the values of the step it names, with no gap between.
    model = PerturbedMLP(nnx.Rngs(0))
    step = nnx.jit(lambda model, x: model(x))
    inputs = [jnp.full((2, 4), i / 100) for i in range(600)]
    with watch(model, keep_steps=64, display=False, steps="calls") as w:
        for i, x in enumerate(inputs):
            step(model, x)
            if i == 200:
                w.stream.settle()  # the grid keeps one step in four from here on
    act = w.stream.series[((), "Intermediate", "act")]
    steps = act.steps[: act.size]
    assert act.grid.stride > 1 and steps[-1] == 599
    expected = [float(model.hidden(inputs[s]).mean()) for s in steps]
    np.testing.assert_allclose(act.stats[: act.size, act.columns.index("mean")], expected, rtol=1e-5)


def test_gradients_of_perturbed_values_match_jax_grad_by_hand(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, grads=True, display=False) as w:
        step(model, optimizer, x, y)
    hidden = model.hidden(x)
    want = jax.grad(lambda h: jnp.mean((model.second(h) - y) ** 2))(hidden)
    grad = w.stream.series[((), "Gradient", "h")]
    value = w.stream.series[((), "Perturbation", "h")]
    assert grad.kind == Gradient.__name__
    assert row(grad, 0, "mean") == pytest.approx(float(want.mean()), rel=1e-4, abs=1e-9)
    assert row(grad, 0, "std") == pytest.approx(float(want.std()), rel=1e-4)
    assert row(value, 0, "mean") == pytest.approx(float(hidden.mean()), rel=1e-5)


def test_grads_on_a_model_that_never_perturbs_warn_once_naming_perturb():
    model = Block(4, nnx.Rngs(0))  # sows, never perturbs
    step = nnx.jit(nnx.grad(lambda m, x: m(x).sum()))
    x = jax.random.normal(jax.random.key(1), (2, 4))
    with pytest.warns(
        JaxCaptureWarning, match=r'Module\.perturb.*`x = self\.perturb\("hidden", x\)`'
    ) as caught:
        with watch(model, grads=True, display=False) as w:
            for _ in range(3):
                step(model, x)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert list(w.stream.series) == [((), "Intermediate", "act")]
    # A model that perturbs, or a watch without grads=True, does not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxCaptureWarning)
        with watch(model, display=False):
            step(model, x)
        perturbs = PerturbedMLP(nnx.Rngs(0))
        with watch(perturbs, grads=True, display=False):
            nnx.grad(loss_fn)(perturbs, jnp.ones((8, 4)), jnp.ones((8, 1)))


def test_sites_sent_by_callback_are_listed_in_the_order_the_model_computes_them(setup, monkeypatch):
    model, optimizer, x, y = setup
    step = make_step([])
    deliver = Stream.deliver

    def backwards(self, delivery):
        held.append(delivery)
        if len(held) == 3:  # the three callbacks of the step, handed over last first
            for one in reversed(held):
                deliver(self, one)

    held = []
    monkeypatch.setattr(Stream, "deliver", backwards)
    with watch(model, grads=True, display=False) as w:
        step(model, optimizer, x, y)
    # Listed as traced, forward then backward, whatever order the callbacks
    # of the activation and of the gradient ran in.
    order = [((), "Perturbation", "h"), ((), "Intermediate", "act"), ((), "Gradient", "h")]
    assert len(held) == 3
    assert list(w.stream.series) == order


def test_the_first_nonfinite_step_and_site_are_flagged(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, display=False) as w:
        for i in range(6):
            step(model, optimizer, x.at[0, 0].set(jnp.nan) if i >= 3 else x, y)
    assert w.stream.first_nonfinite == ("act", 3)
    w.view.publish(final=True)
    assert w.view._progress["nonfinite"] == {"site": "act", "step": 3, "run": 0}
    assert "first NaN/Inf: act at step 3" in repr(w)


class Chain(nnx.Module):
    """Two sowing blocks whose names sort in the reverse of their call order."""

    def __init__(self, rngs: nnx.Rngs):
        self.a_second = Block(4, rngs)
        self.b_first = Block(4, rngs)

    def __call__(self, x):
        return self.a_second(self.b_first(x))


def test_among_sites_that_go_nonfinite_in_one_step_the_first_in_execution_order_is_flagged():
    model = Chain(nnx.Rngs(0))
    forward = nnx.jit(lambda model, x: model(x))
    x = jnp.ones((2, 4))
    with watch(model, display=False, steps="calls") as w:
        for i in range(4):
            forward(model, x.at[0, 0].set(jnp.nan) if i >= 2 else x)
    assert w.stream.first_nonfinite == ("b_first.act", 2)


def test_with_grads_the_first_site_traced_is_flagged_whichever_callback_runs_first(setup, monkeypatch):
    model, optimizer, x, y = setup
    step = make_step([])
    orders = {}
    deliver = Stream.deliver

    def note_order(self, delivery):
        for item in delivery.items:
            orders.setdefault(item.var_type.__name__, set()).add(item.order)
        deliver(self, delivery)

    monkeypatch.setattr(Stream, "deliver", note_order)
    with watch(model, grads=True, display=False) as w:
        for i in range(3):
            step(model, optimizer, x.at[0, 0].set(jnp.nan) if i == 2 else x, y)
    # Every callback carries when its site was traced, the same on each call.
    (value,), (act,), (grad,) = orders["Perturbation"], orders["Intermediate"], orders["Gradient"]
    assert value < act < grad
    # All three hold a NaN at step 2; the perturbed value was traced first.
    assert w.stream.first_nonfinite == ("h (activation)", 2)


def test_scanned_layers_stream_one_stacked_row_per_step():
    model = Stack(3, 4, nnx.Rngs(0))
    forward = nnx.jit(lambda model, x: model(x))
    x = jax.random.normal(jax.random.key(0), (2, 4))
    with watch(model, display=False) as w:
        for _ in range(5):
            forward(model, x)
    (act,) = w.stream.series.values()
    assert act.label == "blocks.act" and w.stream.steps_seen == 5
    # The row pools the three layers: its histogram counts all their values.
    assert act.hists[0].sum() == 3 * 2 * 4
    with capture(model) as cap:
        forward(model, x)
    (record,) = cap.records
    assert record.shape == (3, 2, 4)
    assert row(act, 4, "mean") == pytest.approx(float(record.value.mean()), rel=1e-5)
    assert row(act, 4, "max") == pytest.approx(float(record.value.max()), rel=1e-5)


def test_stop_on_nonfinite_raises_naming_site_and_step_and_the_model_stays_usable(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    with pytest.raises(NonFiniteError, match=r"act held a NaN or Inf at step 2") as caught:
        with watch(model, stop_on_nonfinite=True, display=False) as w:
            for i in range(50):
                loss = step(model, optimizer, x.at[0, 0].set(jnp.nan) if i >= 2 else x, y)
                jax.block_until_ready(loss)
                jax.effects_barrier()
                w.log(step=i, loss=loss)
    assert caught.value.site == "act" and caught.value.step == 2
    assert "__captures__" not in vars(model)
    # Usable: the same compiled step runs again, and a new watch records it.
    with watch(model, display=False) as again:
        step(model, optimizer, x, y)
    assert again.stream.series[((), "Intermediate", "act")].size == 1


def test_the_explicit_path_records_summaries_made_in_the_users_step(setup):
    model, optimizer, x, y = setup

    def plain_loss(model, x, y):
        return jnp.mean((model.second(model.hidden(x)) - y) ** 2)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(plain_loss)(model, x, y)
        optimizer.update(model, grads)
        return loss, summarize({"hidden": model.hidden(x)}, bins=16)

    with watch(bins=16, display=False) as w:
        for i in range(0, 30, 3):
            loss, summaries = train_step(model, optimizer, x, y)
            w.update(i, summaries)
            w.log(step=i, loss=loss)
    hidden = w.stream.series[("update", "hidden")]
    assert hidden.steps[: hidden.size].tolist() == list(range(0, 30, 3))
    assert row(hidden, 0, "mean") == pytest.approx(float(model.hidden(x).mean()), rel=1e-5)
    assert w.stream.scalars["loss"].size == 10


def test_summaries_with_other_bins_are_refused_with_the_fix(setup):
    model, _, x, _ = setup
    summaries = nnx.jit(lambda m, x: {"hidden": summarize(m.hidden(x), bins=8)})(model, x)
    with watch(bins=16, display=False) as w:
        with pytest.raises(ValueError, match=r"'hidden' has 8 bins .* summarize\(\.\.\., bins=16\)"):
            w.update(0, summaries)
        w.update(1, nnx.jit(lambda m, x: {"hidden": summarize(m.hidden(x), bins=16)})(model, x))
    assert w.stream.series[("update", "hidden")].size == 1


def test_include_selects_the_summaries_an_update_records(setup):
    model, _, x, _ = setup
    summaries = nnx.jit(
        lambda m, x: summarize({"hidden": m.hidden(x), "out": m.second(m.hidden(x))}, bins=16)
    )(model, x)
    with watch(bins=16, include="hid", display=False) as w:
        w.update(0, summaries)
    assert list(w.stream.series) == [("update", "hidden")]


def test_the_view_publishes_at_most_ten_times_a_second(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    start = time.perf_counter()
    with watch(model, display=False) as w:
        while time.perf_counter() - start < 0.6:
            step(model, optimizer, x, y)
    elapsed = time.perf_counter() - start
    # One publish per period at most, plus the final one.
    assert 1 <= w.view._update["seq"] <= elapsed / PUBLISH_SECONDS + 2
    assert w.view._progress["seen"] == w.stream.steps_seen


def test_updates_after_the_first_seconds_carry_only_new_rows(setup, monkeypatch):
    model, optimizer, x, y = setup
    step = make_step([])
    # This test publishes by hand: keep the background publisher asleep.
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 3600.0)
    with watch(model, display=False) as w:
        view = w.view
        view._created -= 60  # past the start-up window of base updates
        view._sent_version = w.stream.version
        for _ in range(3):
            step(model, optimizer, x, y)
        jax.effects_barrier()
        w.stream.settle()
        view.publish()
        first = np.frombuffer(view._update["index"], np.int32).tolist()
        for _ in range(2):
            step(model, optimizer, x, y)
        jax.effects_barrier()
        w.stream.settle()
        view.publish()
        update = view._update
        second = np.frombuffer(update["index"], np.int32).tolist(), update["base"], len(update["hists"])
    assert first == [0, 0, 3]
    assert second == ([0, 0, 2], False, 2 * 4 * w.stream.bins)


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="every must be a positive integer"):
        watch(every=0)
    with pytest.raises(ValueError, match="keep_steps"):
        watch(keep_steps=1)
    with pytest.raises(ValueError, match="bins must be an integer from 1 to"):
        watch(bins=0)
    with pytest.raises(TypeError, match="w.update"):
        watch(object())


def test_rows_made_in_one_batch_match_one_summary_at_a_time():
    arrays = [
        jax.random.normal(jax.random.key(0), (32, 16)),
        jnp.array([0.0, 0.0, 1.0, jnp.nan, jnp.inf, -2.0]),
        jnp.zeros(5),
        jnp.full(3, jnp.nan),
    ]
    rows = np.stack([np.asarray(packed_summary(a, 16)) for a in arrays])
    stacked = unpack_summary(rows, (), "float32")  # one summary per row
    batch = row_stats(stacked, np.array([a.size for a in arrays], np.float64))
    series = SiteSeries("site", "Intermediate", 16, 4)
    for a, row, got in zip(arrays, rows, batch, strict=True):
        want, _ = series.row_of(unpack_summary(row, a.shape, a.dtype))
        np.testing.assert_array_equal(got, np.asarray(want, np.float32))


def test_device_work_starts_on_the_loops_thread_and_the_background_thread_only_fetches(setup, monkeypatch):
    # With several processes, a program started by the background thread
    # would start at a different moment on each process, and the run hangs.
    import threading

    import jaxcapture_nb.runs.stream as stream_module

    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 0.01)
    threads = []
    packed_row = stream_module.packed_row

    def recording(value, bins):
        threads.append(threading.current_thread())
        return packed_row(value, bins=bins)

    monkeypatch.setattr(stream_module, "packed_row", recording)
    model, _, x, _ = setup
    with watch(model, display=False, steps="calls") as w:
        for i in range(20):
            model(x * i)  # eager sows
            w.update(i, {"raw": x * i, "summarized": summarize(x * i)})
            w.log(step=i, loss=jnp.mean(x * i))
    assert threads and set(threads) == {threading.main_thread()}
    assert len(threads) == 20 * 2  # act, sowed eagerly, and the raw update
    act, raw = w.stream.series[((), "Intermediate", "act")], w.stream.series[("update", "raw")]
    assert act.size == raw.size == 20
    assert row(raw, 19, "max") == pytest.approx(float((x * 19).max()), rel=1e-6)
    assert w.stream.scalars["loss"].size == 20


def published_while_running(setup, publish, seconds=0.5):
    """Trains for a while under watch(publish=...); the view's update counts seen inside the block."""
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, display=False, publish=publish) as w:
        view = w.view  # made now, as displaying the watch makes it
        threads = {t.name for t in threading.enumerate()}
        jax.block_until_ready(step(model, optimizer, x, y))  # compiled before the clock starts
        start, k = time.perf_counter(), 1
        while time.perf_counter() - start < seconds:
            loss = step(model, optimizer, x, y)
            w.log(step=k, loss=loss)
            k += 1
        jax.block_until_ready(loss)
        w.log(step=k, loss=loss)  # after the throttle period: sends the finished rows
        time.sleep(PUBLISH_SECONDS)
        step(model, optimizer, x, y)
        step(model, optimizer, x, y)  # the call after one returns publishes its rows
        inside = (view._update["seq"], view._progress["seen"])
    return threads, inside, k


def test_loop_publishing_sends_updates_from_the_loops_thread_without_a_background_thread(setup):
    threads, (seq, seen), steps = published_while_running(setup, "loop")
    assert "jaxcapture-watch" not in threads
    # Several throttled updates went out while the loop ran, and they hold its steps.
    assert seq >= 3 and seen >= steps


def test_auto_publishing_uses_the_loop_in_colab_and_a_thread_elsewhere(monkeypatch):
    from jaxcapture_nb.runs.publishing import publishing_thread

    assert publishing_thread("auto") == "thread"
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert publishing_thread("auto") == "loop"
    assert publishing_thread("thread") == "thread"  # the user can force either
    with pytest.raises(ValueError, match="publish must be one of"):
        publishing_thread("browser")


def test_thread_publishing_runs_its_background_thread(setup):
    threads, (seq, _), _ = published_while_running(setup, "thread", seconds=0.3)
    assert "jaxcapture-watch" in threads and seq >= 2


class Tapped(nnx.Module):
    """Perturbs and sows one value per call."""

    def __init__(self, rngs: nnx.Rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("h", self.lin(x))
        self.sow(nnx.Intermediate, "act", h)
        return h


class Rematted(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.blk = Tapped(rngs)

    def __call__(self, x):
        return nnx.remat(lambda block, x: block(x))(self.blk, x)


class AppliedTwice(nnx.Module):
    """One block applied twice per call: each of its sites sows two values a step."""

    def __init__(self, rngs: nnx.Rngs):
        self.blk = Tapped(rngs)

    def __call__(self, x):
        return self.blk(self.blk(x))


def _train(model_cls, steps, **kwargs):
    model = model_cls(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.0), wrt=nnx.Param)
    x = jnp.ones((2, 4))

    @nnx.jit
    def train_step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    with watch(model, display=False, **kwargs) as w:
        for _ in range(steps):
            train_step(model, optimizer, x)
    return {
        (s.label, s.kind): (w.stream.steps_seen, s.steps[: s.size].tolist()) for s in w.stream.series.values()
    }, w


@pytest.mark.parametrize("every", [1, 2])
def test_sites_inside_remat_are_recorded_once_per_step_with_grads(every):
    # The forward pass that remat recomputes in the backward pass calls back again.
    recorded, _ = _train(Rematted, 4, grads=True, every=every)
    steps = [0, 1, 2, 3][::every]
    assert recorded == {
        ("blk.h", "Perturbation"): (4, steps),
        ("blk.act", "Intermediate"): (4, steps),
        ("blk.h", "Gradient"): (4, steps),
    }


@pytest.mark.parametrize("grads", [False, True])
@pytest.mark.parametrize("every", [1, 2])
def test_a_site_sowed_twice_a_step_is_numbered_by_step_and_its_second_value_is_name_1(grads, every):
    recorded, w = _train(AppliedTwice, 4, grads=grads, every=every)
    steps = [0, 1, 2, 3][::every]
    # Flax keeps a call's values of one site as a tuple; the k-th is site ``name[k]``.
    expected = {("blk.act", "Intermediate"): (4, steps), ("blk.act[1]", "Intermediate"): (4, steps)}
    if grads:
        for label in ("blk.h", "blk.h[1]"):
            expected[(label, "Perturbation")] = expected[(label, "Gradient")] = (4, steps)
    assert recorded == expected
    assert w.stream.steps_seen == 4
    w.view.publish(final=True)
    assert {"label": "blk.act[1]", "kind": "Intermediate", "run": 0} in w.view._sites


def test_eager_values_are_numbered_per_site_and_thinned_by_every():
    model = AppliedTwice(nnx.Rngs(0))
    with watch(model, every=2, display=False) as w:
        for _ in range(5):
            model(jnp.ones((2, 4)))
    # Outside a compiled step no call number is known: each eager sow is a step of its site.
    (act,) = w.stream.series.values()
    assert (w.stream.steps_seen, act.steps[: act.size].tolist()) == (10, [0, 2, 4, 6, 8])


def test_eager_calls_between_compiled_steps_take_steps_of_their_own():
    model = Tapped(nnx.Rngs(0))
    forward = nnx.jit(lambda model, x: model(x))
    x = jnp.ones((2, 4))
    with watch(model, display=False) as w:
        for _ in range(3):
            forward(model, x)
            model(x)
    (act,) = [s for s in w.stream.series.values() if s.label == "act"]
    assert (w.stream.steps_seen, act.steps[: act.size].tolist()) == (6, [0, 1, 2, 3, 4, 5])


def test_a_watch_nobody_shows_makes_no_widget_until_asked(setup):
    model, optimizer, x, y = setup
    step = make_step([])
    with watch(model, display=False) as w:
        for _ in range(3):
            step(model, optimizer, x, y)
        assert w._view is None
    # Asked for after the block, the view shows the whole run, finished.
    assert w.view._progress["seen"] == 3 and w.view._progress["done"]


@pytest.mark.parametrize(
    ("error", "said"),
    [(KeyboardInterrupt, "interrupted at step 4"), (ValueError, "stopped by ValueError at step 4")],
)
def test_a_run_stopped_early_says_so_where_one_that_ended_says_done(error, said):
    model = PerturbedMLP(nnx.Rngs(0))
    with pytest.raises(error), watch(model, display=False) as w:
        for step in range(10):
            model(jnp.ones((2, 4)))
            w.log(step=step, loss=1.0)
            if step == 3:  # the stop button, or an error, in the fourth step
                raise error
    progress = w.view._progress
    assert progress["done"] and progress["ended"] == said
    assert said in repr(w.view) and said in w.view._repr_mimebundle_()[0]["text/html"]
    with watch(model, display=False) as finished:
        model(jnp.ones((2, 4)))
    assert finished.view._progress["ended"] == "" and "at step" not in repr(finished.view)


def test_a_running_watch_beats_so_its_view_can_tell_a_silent_kernel():
    with watch(display=False, publish="thread") as w:
        w.log(step=0, loss=1.0)
        w.stream.settle()
        w.view.publish()
        running = dict(w.view._progress)
    assert running["silence"] > 0 and "beat" in running
    # An ended run, or one published from the loop (which may be silent for a long step), has none.
    assert "beat" not in w.view._progress
    with watch(display=False, publish="loop") as looped:
        looped.log(step=0, loss=1.0)
        looped.stream.settle()
        looped.view.publish()
        assert "beat" not in looped.view._progress


def test_percentiles_among_a_relus_zeros_are_exactly_zero_live_and_reopened(tmp_path):
    """Half a ReLU's outputs are 0: the bands' low percentiles are 0, not a slope across the bin of 0."""
    from jaxcapture_nb import open_run

    values = jax.nn.relu(jax.random.normal(jax.random.key(0), (20_000,)) + 0.05)
    with watch(log_dir=tmp_path, display=False) as w:
        w.update(0, {"relu": summarize(values)})
    reopened = open_run(tmp_path).stream
    want = np.percentile(np.asarray(values), [7, 16, 31, 50, 69, 84, 93])
    width = float(values.max()) / 64  # one bin
    for stream in (w.stream, reopened):
        (series,) = stream.series.values()
        columns = series.columns
        got = series.stats[0, columns.index("p7") : columns.index("p93") + 1]
        assert got[:3].tolist() == [0.0, 0.0, 0.0] and want[:3].tolist() == [0.0, 0.0, 0.0]
        np.testing.assert_allclose(got, want, atol=width)


def test_the_saved_heat_leaves_a_relus_zeros_out_of_its_shades_and_marks_them_apart():
    from jaxcapture_nb.runs.sources import read_run
    from jaxcapture_nb.views.live_static import live_png, over_steps

    with watch(display=False) as w:
        for step in range(6):
            values = jax.nn.relu(jax.random.normal(jax.random.key(step), (4000,)))
            w.update(step, {"relu": summarize(values)})
    (series,) = read_run(w).sites
    image, lo, hi, shares = over_steps(series)
    zeros = np.asarray(
        [
            float(summarize(jax.nn.relu(jax.random.normal(jax.random.key(k), (4000,)))).zero_count)
            for k in range(6)
        ]
    )
    np.testing.assert_allclose(shares, zeros / 4000, atol=1e-6)
    # With the zeros in, the bin of 0 held half the values, and every other shade was paler.
    washed = np.zeros_like(image)
    for k in range(series.size):
        row = series.stats[k]
        edges = np.linspace(row[series.columns.index("lo")], row[series.columns.index("hi")], series.bins + 1)
        centres = (edges[:-1] + edges[1:]) / 2
        column, _ = np.histogram(centres, bins=image.shape[0], range=(lo, hi), weights=series.hists[k])
        washed[:, k] = np.sqrt(column / column.max())
    assert lo == 0.0 and image[1:].mean() > 1.2 * washed[1:].mean()
    assert live_png(read_run(w)).startswith(b"\x89PNG")
