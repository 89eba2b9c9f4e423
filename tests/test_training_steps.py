"""What a step is: a training step of the watched model, whatever else the loop calls it for.

By default a watch counts the calls that differentiate the model as its
training steps; every other call that sows (an evaluation step, validation
through ``nnx.view``, another model's step that calls this one) is an
evaluation, recorded apart at the latest training step. A run resumed from a
checkpoint goes on numbering where it left off, and its log reads as one run,
in ``open_run`` as in TensorBoard. Each loop's rows are checked against the
same loop without a watch.
"""

import contextlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from models import SowingRegressor, Stack
from training import mse_train_step as train_step

from jaxcapture_nb import JaxCaptureWarning, read_run, watch

SITE = "activation"
X = jax.random.normal(jax.random.key(1), (8, 3))
Y = jnp.ones((8, 1))
X_EVAL = jax.random.normal(jax.random.key(2), (8, 3))


def fresh():
    model = SowingRegressor(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit
def eval_step(model, x, y):
    return loss_fn(model, x, y)


def activation_mean(model, x):
    return float(jnp.mean(nnx.relu(model.hidden(x))))


def rows(w):
    """Each site's recorded steps, by (label, kind)."""
    return {(s.label, s.kind): s.steps[: s.size].tolist() for s in w.stream.series.values()}


def means(w, kind):
    series = next(s for s in w.stream.series.values() if s.kind == kind)
    return series.stats[: series.size, series.columns.index("mean")].tolist()


def test_an_evaluation_step_inside_the_loop_is_recorded_apart_at_the_training_step():
    model, optimizer = fresh()
    twin, twin_optimizer = fresh()  # the same loop without a watch
    want_train, want_eval = [], []
    for step in range(6):
        want_train.append(activation_mean(twin, X))
        train_step(twin, twin_optimizer, X, Y)
        if step % 2 == 1:
            want_eval.append(activation_mean(twin, X_EVAL))
    with watch(model, display=False) as w:
        for step in range(6):
            w.log(step=step, loss=train_step(model, optimizer, X, Y))
            if step % 2 == 1:
                w.log(step=step, val_loss=eval_step(model, X_EVAL, Y))
    assert rows(w) == {(SITE, "Intermediate"): [0, 1, 2, 3, 4, 5], (SITE, "Evaluation"): [1, 3, 5]}
    assert w.stream.scalars["val_loss"].steps[:3].tolist() == [1, 3, 5]
    np.testing.assert_allclose(means(w, "Intermediate"), want_train, rtol=1e-5)
    np.testing.assert_allclose(means(w, "Evaluation"), want_eval, rtol=1e-5)
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)), jax.tree.leaves(nnx.state(twin, nnx.Param)), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("made", ["before the block", "inside the block"])
def test_validation_through_a_view_is_an_evaluation(made):
    model, optimizer = fresh()
    validate = nnx.jit(lambda view, x: view(x))
    view = nnx.view(model) if made == "before the block" else None
    slow = (
        pytest.warns(JaxCaptureWarning, match="compiles without a place")
        if view
        else contextlib.nullcontext()
    )
    with slow, watch(model, display=False) as w:
        for _ in range(4):
            train_step(model, optimizer, X, Y)
            # A view made before the block has no place for the watch's values: they leave by host
            # callback and are stamped as they arrive, so the loop reads its result, as loops do.
            jax.block_until_ready(validate(view or nnx.view(model), X_EVAL))
    assert rows(w) == {(SITE, "Intermediate"): [0, 1, 2, 3], (SITE, "Evaluation"): [0, 1, 2, 3]}
    assert means(w, "Evaluation")[-1] == pytest.approx(activation_mean(model, X_EVAL), rel=1e-5)


def test_several_evaluation_batches_at_one_step_keep_the_first():
    model, optimizer = fresh()
    with watch(model, display=False) as w:
        train_step(model, optimizer, X, Y)
        for batch in (X_EVAL, X, 2 * X):
            eval_step(model, batch, Y)
    assert rows(w) == {(SITE, "Intermediate"): [0], (SITE, "Evaluation"): [0]}
    assert means(w, "Evaluation") == [pytest.approx(activation_mean(model, X_EVAL), rel=1e-5)]


def test_forward_passes_alone_are_evaluations_numbered_by_themselves():
    model, _ = fresh()
    forward = nnx.jit(lambda m, x: m(x))
    with watch(model, display=False) as w:
        for _ in range(3):
            forward(model, X)
        model(X)  # an eager one too
    assert rows(w) == {(SITE, "Evaluation"): [0, 1, 2, 3]}


def test_an_evaluation_before_the_first_training_step_is_at_step_0():
    model, optimizer = fresh()
    with watch(model, display=False) as w:
        for step in range(3):
            if step == 0:
                eval_step(model, X_EVAL, Y)
            train_step(model, optimizer, X, Y)
    assert rows(w) == {(SITE, "Evaluation"): [0], (SITE, "Intermediate"): [0, 1, 2]}


def test_eager_training_steps_are_steps_and_eager_forward_passes_evaluations():
    model, optimizer = fresh()
    with watch(model, display=False) as w:
        for _ in range(2):
            loss, grads = nnx.value_and_grad(loss_fn)(model, X, Y)
            optimizer.update(model, grads)
            model(X_EVAL)
    assert rows(w) == {(SITE, "Intermediate"): [0, 1], (SITE, "Evaluation"): [0, 1]}


def test_layers_scanned_inside_the_gradient_make_a_training_step():
    """The stacked blocks' parameters are traced by the scan, inside grad's trace: still differentiated."""
    model = Stack(3, 4, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = jnp.ones((2, 4))

    @nnx.jit
    def step(model, optimizer):
        grads = nnx.grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)

    with watch(model, display=False) as w:
        for _ in range(2):
            step(model, optimizer)
            nnx.jit(lambda m: m(x))(model)
    assert rows(w) == {("blocks.act", "Intermediate"): [0, 1], ("blocks.act", "Evaluation"): [0, 1]}


class Generator(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, z):
        fake = self.linear(z)
        self.sow(nnx.Intermediate, "fake", fake)
        return fake


def test_two_watched_models_stepped_alternately_each_count_their_own_steps():
    """A GAN: each model's step calls the other, which is an evaluation of that one."""
    generator, discriminator = Generator(nnx.Rngs(1)), SowingRegressor(nnx.Rngs(0))
    g_opt = nnx.Optimizer(generator, optax.sgd(0.1), wrt=nnx.Param)
    d_opt = nnx.Optimizer(discriminator, optax.sgd(0.1), wrt=nnx.Param)

    @nnx.jit
    def d_step(d, d_opt, g, z, x):
        loss = lambda d: jnp.mean(d(g(z)) ** 2) + jnp.mean((d(x) - 1.0) ** 2)  # noqa: E731
        d_opt.update(d, nnx.grad(loss)(d))

    @nnx.jit
    def g_step(g, g_opt, d, z):
        g_opt.update(g, nnx.grad(lambda g: jnp.mean((d(g(z)) - 1.0) ** 2))(g))

    with watch(generator, display=False) as wg, watch(discriminator, display=False) as wd:
        for _ in range(4):
            d_step(discriminator, d_opt, generator, X, X_EVAL)
            g_step(generator, g_opt, discriminator, X)
    assert rows(wg) == {("fake", "Evaluation"): [0, 1, 2], ("fake", "Intermediate"): [0, 1, 2, 3]}
    # The discriminator sows twice in its own step (fake and real batches) and once in the generator's.
    assert rows(wd) == {
        (SITE, "Intermediate"): [0, 1, 2, 3],
        (f"{SITE}[1]", "Intermediate"): [0, 1, 2, 3],
        (SITE, "Evaluation"): [0, 1, 2, 3],
    }


def test_a_training_step_made_before_the_block_counts_its_evaluations_at_its_steps():
    """Its values leave by host callback, stamped with its steps: evaluations still go at those steps."""
    model, optimizer = fresh()
    cached = nnx.cached_partial(train_step, model, optimizer)
    slow = pytest.warns(JaxCaptureWarning, match=r"The step mse_train_step\(\) compiles without a place")
    with slow, watch(model, display=False) as w:
        for _ in range(3):
            jax.block_until_ready(cached(X, Y))
            for batch in (X_EVAL, X):  # two evaluation batches a step: the first is kept
                eval_step(model, batch, Y)
    assert rows(w) == {(SITE, "Intermediate"): [0, 1, 2], (SITE, "Evaluation"): [0, 1, 2]}


def test_steps_calls_counts_every_call_as_before():
    model, optimizer = fresh()
    with watch(model, display=False, steps="calls") as w:
        for _ in range(2):
            train_step(model, optimizer, X, Y)
            eval_step(model, X_EVAL, Y)
    assert rows(w) == {(SITE, "Intermediate"): [0, 1, 2, 3]}


# -- resumed runs ---------------------------------------------------------------------


def train_and_log(model, optimizer, w, steps):
    for step in steps:
        w.log(step=step, loss=train_step(model, optimizer, X, Y))


@pytest.mark.parametrize("start", ["optimizer", "number"])
def test_a_resumed_run_goes_on_from_its_step_and_its_log_reads_as_one_run(tmp_path, start):
    """Trained 5 steps, restored from the checkpoint saved after step 2, trained on to step 5."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model, optimizer = fresh()
    with watch(model, display=False, log_dir=tmp_path) as first:
        train_and_log(model, optimizer, first, range(3))
        checkpoint = jax.tree.map(jnp.copy, nnx.state((model, optimizer)))
        train_and_log(model, optimizer, first, range(3, 5))  # then the process dies
    nnx.update((model, optimizer), checkpoint)
    assert int(optimizer.step[...]) == 3
    with watch(
        model, display=False, log_dir=tmp_path, start_step=optimizer if start == "optimizer" else 3
    ) as w:
        train_and_log(model, optimizer, w, range(3, 6))
    assert rows(w) == {(SITE, "Intermediate"): [3, 4, 5]}
    resumed_loss = w.stream.scalars["loss"].stats[:3, 0].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one run: nothing to warn about
        run = read_run(tmp_path)
    activation = next(iter(run.stream.series.values()))
    assert activation.steps[: activation.size].tolist() == [0, 1, 2, 3, 4, 5]
    loss = run.stream.scalars["loss"]
    assert loss.steps[: loss.size].tolist() == [0, 1, 2, 3, 4, 5]
    # Steps 3 and 4 are the resumed run's, not the first run's that the restart replaced.
    np.testing.assert_allclose(loss.stats[3:6, 0], resumed_loss, rtol=1e-6)
    log = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "histograms": 0})
    log.Reload()
    assert [e.step for e in log.Scalars("loss")] == [0, 1, 2, 3, 4, 5]
    np.testing.assert_allclose([e.value for e in log.Scalars("loss")][3:], resumed_loss, rtol=1e-6)
    assert [e.step for e in log.Histograms(SITE)] == [0, 1, 2, 3, 4, 5]


def test_evaluations_are_logged_under_their_own_tags_and_read_back_apart(tmp_path):
    model, optimizer = fresh()
    with watch(model, display=False, log_dir=tmp_path) as w:
        for _ in range(2):
            train_step(model, optimizer, X, Y)
            eval_step(model, X_EVAL, Y)
    run = read_run(tmp_path)
    read = {(s.label, s.kind): s.steps[: s.size].tolist() for s in run.stream.series.values()}
    assert read == rows(w) == {(SITE, "Intermediate"): [0, 1], (SITE, "Evaluation"): [0, 1]}


@pytest.mark.parametrize("bad", [-1, 2.5, "3", True])
def test_a_start_step_that_is_no_step_is_refused_naming_what_it_takes(bad):
    model, _ = fresh()
    with pytest.raises(ValueError, match="start_step must be a whole number of steps.*nnx.Optimizer"):
        watch(model, start_step=bad)


def test_an_nnx_vmap_ensemble_trains_watched_as_unwatched_with_the_ensemble_axis_in_its_rows():
    """Three members made with nnx.split_rngs and nnx.vmap, called with in_axes=(0, None) in the step."""

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return SowingRegressor(rngs)

    @nnx.jit
    def step(ensemble, optimizer, x, y):
        def loss(ensemble):
            predictions = nnx.vmap(lambda member, x: member(x), in_axes=(0, None))(ensemble, x)
            return jnp.mean((predictions - y[None]) ** 2)

        optimizer.update(ensemble, nnx.grad(loss)(ensemble))

    def trained(watched):
        ensemble = make(nnx.Rngs(0))
        optimizer = nnx.Optimizer(ensemble, optax.sgd(0.1), wrt=nnx.Param)
        first = float(
            jnp.mean(
                nnx.relu(
                    jnp.einsum("bi,mio->mbo", X, ensemble.hidden.kernel[...])
                    + ensemble.hidden.bias[...][:, None]
                )
            )
        )
        if not watched:
            for _ in range(3):
                step(ensemble, optimizer, X, Y)
            return ensemble, None, first
        with watch(ensemble, display=False) as w:
            for _ in range(3):
                step(ensemble, optimizer, X, Y)
        return ensemble, w, first

    plain, _, _ = trained(False)
    ensemble, w, first_mean = trained(True)
    for a, b in zip(
        jax.tree.leaves(nnx.state(ensemble, nnx.Param)),
        jax.tree.leaves(nnx.state(plain, nnx.Param)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    assert rows(w) == {(SITE, "Intermediate"): [0, 1, 2]}
    activation = next(iter(w.stream.series.values()))
    assert activation.shape == (3, 8, 8)  # members, batch, features
    assert means(w, "Intermediate")[0] == pytest.approx(first_mean, rel=1e-5)


def test_an_ensemble_watched_every_other_step_records_those_steps():
    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return SowingRegressor(rngs)

    ensemble = make(nnx.Rngs(0))
    optimizer = nnx.Optimizer(ensemble, optax.sgd(0.1), wrt=nnx.Param)

    @nnx.jit
    def step(ensemble, optimizer):
        loss = lambda e: jnp.mean(nnx.vmap(lambda m, x: m(x), in_axes=(0, None))(e, X) ** 2)  # noqa: E731
        optimizer.update(ensemble, nnx.grad(loss)(ensemble))

    with watch(ensemble, every=2, display=False) as w:
        for _ in range(5):
            step(ensemble, optimizer)
    assert rows(w) == {(SITE, "Intermediate"): [0, 2, 4]}


def test_with_gradients_recorded_each_compiled_call_moves_the_step_on_as_it_returns(monkeypatch):
    """Values and gradients leave by callback; each call still counts as a training step when it returns.

    Otherwise only the callbacks would move the clock on, and once JAX
    dispatches calls ahead of them, a call would take in the step of the one
    before it, and its values would be dropped as that step's repeats.
    """
    from models import PerturbedMLP

    from jaxcapture_nb.core.clock import StepClock

    returned = []
    call = StepClock.call
    monkeypatch.setattr(StepClock, "call", lambda clock: returned.append(1) or call(clock))
    model = PerturbedMLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x, y = jnp.ones((8, 4)), jnp.zeros((8, 1))

    @nnx.jit
    def step(model, optimizer):
        optimizer.update(model, nnx.grad(lambda m: jnp.mean((m(x) - y) ** 2))(model))

    with watch(model, grads=True, display=False) as w:
        for _ in range(30):
            step(model, optimizer)
    assert len(returned) == 30
    assert {(s.label, s.kind): s.steps[: s.size].tolist() for s in w.stream.series.values()} == {
        ("h", "Perturbation"): list(range(30)),
        ("act", "Intermediate"): list(range(30)),
        ("h", "Gradient"): list(range(30)),
    }
