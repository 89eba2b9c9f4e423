"""Every way Flax documents to write a training step, watched and captured.

Each style trains the same model on the same batches. Watched, each records
the sowed activation at every training step, with the values the model
computes at that step, and leaves the model exactly as the same loop
without a watch leaves it: same parameters, same attributes. A step made
before the block (a ``cached_partial``, or a graph definition split off for
``jax.jit``) is recorded too, through host callbacks. One style that Flax
itself refuses is refused with the same error, watched or not.
"""

import functools
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from models import SowingRegressor

from jaxcapture_nb import capture, watch

STEPS = 4
BATCHES = jax.random.normal(jax.random.key(1), (STEPS, 8, 3))
TARGETS = jnp.ones((STEPS, 8, 1))
SITE = "activation"


def fresh():
    model = SowingRegressor(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def train_step(model, optimizer, x, y):
    """One SGD step; the sows are popped as Flax asks of a cached_partial step (a no-op when watched)."""
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    nnx.pop(model, nnx.Intermediate)
    return loss


def activation_mean(model, x):
    return float(jnp.mean(nnx.relu(model.hidden(x))))


@functools.cache
def reference(micro_batches=1):
    """The eager run without a watch: final parameters and the activation's mean at each forward pass, per step."""
    model, optimizer = fresh()
    means = []
    for step in range(0, STEPS, micro_batches):
        grads = None
        for k in range(micro_batches):
            x, y = BATCHES[step + k], TARGETS[step + k]
            means.append(activation_mean(model, x))
            g = nnx.grad(loss_fn)(model, x, y)
            nnx.pop(model, nnx.Intermediate)
            grads = g if grads is None else jax.tree.map(jnp.add, grads, g)
        optimizer.update(model, grads)
    return jax.tree.leaves(nnx.state(model, nnx.Param)), means


# -- the styles: each trains STEPS steps; returns the number of traces --------------------


def graph_jit(model, optimizer, traces):
    step = nnx.jit(counted(train_step, traces))
    for i in range(STEPS):
        step(model, optimizer, BATCHES[i], TARGETS[i])


def tree_mode_jit(model, optimizer, traces):
    step = nnx.jit(counted(train_step, traces), graph=False)
    for i in range(STEPS):
        step(model, optimizer, BATCHES[i], TARGETS[i])


def graph_updates_off(model, optimizer, traces):
    step = nnx.jit(counted(train_step, traces), graph_updates=False)
    for i in range(STEPS):
        step(model, optimizer, BATCHES[i], TARGETS[i])


def tree_mode_context(model, optimizer, traces):
    with nnx.set_graph_mode(False):
        step = nnx.jit(counted(train_step, traces))
        for i in range(STEPS):
            step(model, optimizer, BATCHES[i], TARGETS[i])


def cached_partial(donate):
    def run(model, optimizer, traces):
        step = nnx.jit(counted(train_step, traces), donate_argnums=(0, 1) if donate else ())
        cached = nnx.cached_partial(step, model, optimizer)
        for i in range(STEPS):
            cached(BATCHES[i], TARGETS[i])

    return run


def functional(donate):
    def run(model, optimizer, traces):
        graphdef, state = nnx.split((model, optimizer))

        @functools.partial(jax.jit, donate_argnums=(0,) if donate else ())
        def step(state, x, y):
            traces.append(1)
            model, optimizer = nnx.merge(graphdef, state)
            loss = train_step(model, optimizer, x, y)
            return nnx.state((model, optimizer)), loss

        for i in range(STEPS):
            state, _ = step(state, BATCHES[i], TARGETS[i])
        nnx.update((model, optimizer), state)

    return run


def scanned_steps(model, optimizer, traces):
    @nnx.jit
    def steps(model, optimizer, xs, ys):
        traces.append(1)

        @nnx.scan(in_axes=(nnx.Carry, 0, 0), out_axes=(nnx.Carry, 0))
        def body(carry, x, y):
            loss = train_step(*carry, x, y)
            return carry, loss

        return body((model, optimizer), xs, ys)[1]

    for half in (slice(0, 2), slice(2, 4)):
        steps(model, optimizer, BATCHES[half], TARGETS[half])


def fori_loop_steps(model, optimizer, traces):
    @nnx.jit
    def steps(model, optimizer, xs, ys):
        traces.append(1)

        def body(i, carry):
            train_step(*carry, xs[i], ys[i])
            return carry

        nnx.fori_loop(0, 2, body, (model, optimizer))

    for half in (slice(0, 2), slice(2, 4)):
        steps(model, optimizer, BATCHES[half], TARGETS[half])


def grad_of_split_params(model, optimizer, traces):
    @nnx.jit
    def step(model, optimizer, x, y):
        traces.append(1)
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)
        grads = jax.grad(lambda p: loss_fn(nnx.merge(graphdef, p, rest), x, y))(params)
        optimizer.update(model, grads)

    for i in range(STEPS):
        step(model, optimizer, BATCHES[i], TARGETS[i])


def counted(fn, traces):
    @functools.wraps(fn)
    def body(*args):
        traces.append(1)
        return fn(*args)

    return body


STYLES = {
    "graph-mode nnx.jit": graph_jit,
    "nnx.jit(graph=False)": tree_mode_jit,
    "nnx.jit(graph_updates=False)": graph_updates_off,
    "nnx.set_graph_mode(False)": tree_mode_context,
    "cached_partial": cached_partial(donate=False),
    "cached_partial, donated": cached_partial(donate=True),
    "split + jax.jit + merge": functional(donate=False),
    "split + jax.jit + merge, donated": functional(donate=True),
    "nnx.scan over steps": scanned_steps,
    "nnx.fori_loop over steps": fori_loop_steps,
    "jax.grad of split params": grad_of_split_params,
}
# Made before the watch starts, these steps hold a copy of the model's graph
# without the watch's exit: their values leave by host callback.
MADE_BEFORE = {
    "cached_partial",
    "cached_partial, donated",
    "split + jax.jit + merge",
    "split + jax.jit + merge, donated",
}


def run_style(name, made_before, recorder):
    """Trains with a style under ``recorder`` (a function of the model); returns the model, the block's result, traces.

    ``made_before``: the style's step (a cached_partial, or a graph
    definition split off for jax.jit) is made before the block starts.
    """
    model, optimizer = fresh()
    attributes = {path: sorted(vars(m)) for path, m in nnx.iter_modules(model)}
    traces = []
    if made_before:
        train = made_before_block(name, model, optimizer, traces)
        with recorder(model) as result:
            train()
    else:
        with recorder(model) as result:
            STYLES[name](model, optimizer, traces)
    assert {path: sorted(vars(m)) for path, m in nnx.iter_modules(model)} == attributes
    return model, result, traces


def made_before_block(name, model, optimizer, traces):
    """Makes the step of a style now; returns a function that trains with it."""
    donate = name.endswith("donated")
    if name.startswith("cached_partial"):
        step = nnx.jit(counted(train_step, traces), donate_argnums=(0, 1) if donate else ())
        cached = nnx.cached_partial(step, model, optimizer)
        return lambda: [cached(BATCHES[i], TARGETS[i]) for i in range(STEPS)]
    graphdef, state = nnx.split((model, optimizer))

    @functools.partial(jax.jit, donate_argnums=(0,) if donate else ())
    def step(state, x, y):
        traces.append(1)
        model, optimizer = nnx.merge(graphdef, state)
        loss = train_step(model, optimizer, x, y)
        return nnx.state((model, optimizer)), loss

    def train():
        nonlocal state
        for i in range(STEPS):
            state, _ = step(state, BATCHES[i], TARGETS[i])
        nnx.update((model, optimizer), state)

    return train


CASES = [(name, False) for name in STYLES] + [(name, True) for name in sorted(MADE_BEFORE)]
IDS = [f"{name}{' (made before the block)' if before else ''}" for name, before in CASES]


def assert_trained_as_without_a_watch(model, micro_batches=1):
    want, _ = reference(micro_batches)
    got = jax.tree.leaves(nnx.state(model, nnx.Param))
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("name", "before"), CASES, ids=IDS)
def test_a_watch_records_every_step_of_every_style(name, before):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, w, traces = run_style(name, before, lambda m: watch(m, display=False))
    assert_trained_as_without_a_watch(model)
    # A step made before the block is slow, and says so once, at the line that called it.
    slow = [m for m in caught if "compiles without a place for the watch's values" in str(m.message)]
    assert [(Path(m.filename).name, str(m.message)[:9]) for m in slow] == [
        ("test_loop_styles.py", "The step ")
    ] * before
    series = {s.label: s for s in w.stream.series.values()}
    assert set(series) == {SITE}
    activation = series[SITE]
    assert activation.steps[: activation.size].tolist() == list(range(STEPS))
    means = activation.stats[: activation.size, activation.columns.index("mean")]
    np.testing.assert_allclose(means, reference()[1], rtol=1e-5)
    # One trace per program, however many calls (the scanned styles make two calls of one).
    assert len(traces) == 1


@pytest.mark.parametrize(("name", "before"), CASES, ids=IDS)
def test_a_capture_keeps_every_value_of_every_style(name, before):
    model, cap, _ = run_style(name, before, lambda m: capture(m))
    assert_trained_as_without_a_watch(model)
    records = [r for r in cap.records if r.site == SITE]
    assert [r.call_index for r in records] == list(range(STEPS))
    np.testing.assert_allclose([float(np.mean(r.value)) for r in records], reference()[1], rtol=1e-5)


def assert_two_steps_of_two_micro_batches(w) -> None:
    """Each optimizer step is one step; its micro-batches are the site's first and second values."""
    series = {s.label: s for s in w.stream.series.values()}
    assert {label: s.steps[: s.size].tolist() for label, s in series.items()} == {
        SITE: [0, 1],
        f"{SITE}[1]": [0, 1],
    }
    means = [
        series[label].stats[k, series[label].columns.index("mean")]
        for k in (0, 1)
        for label in (SITE, f"{SITE}[1]")
    ]
    np.testing.assert_allclose(means, reference(micro_batches=2)[1], rtol=1e-5)


def test_gradient_accumulation_over_several_calls_numbers_steps_by_mark():
    """A gradient call per micro-batch, then an update: w.step() says where a step ends."""
    model, optimizer = fresh()
    gradient = nnx.jit(nnx.grad(loss_fn))
    update = nnx.jit(lambda model, optimizer, grads: optimizer.update(model, grads))
    with watch(model, steps="marked", display=False) as w:
        for step in range(2):
            grads = [gradient(model, BATCHES[2 * step + k], TARGETS[2 * step + k]) for k in range(2)]
            update(model, optimizer, jax.tree.map(jnp.add, *grads))
            w.log(step=step, loss=0.0)
            w.step()
    assert_trained_as_without_a_watch(model, micro_batches=2)
    assert_two_steps_of_two_micro_batches(w)
    assert w.stream.scalars["loss"].steps[:2].tolist() == [0, 1]


def test_gradient_accumulation_in_one_scanned_call_numbers_steps_by_mark():
    """The micro-batches in an nnx.scan over a broadcast model, one call per optimizer step."""
    model, optimizer = fresh()

    @nnx.jit
    def step(model, optimizer, xs, ys):
        def body(total, model, xy):
            grads = nnx.grad(loss_fn)(model, *xy)
            nnx.pop(model, nnx.Intermediate)
            return jax.tree.map(jnp.add, total, grads)

        zeros = jax.tree.map(jnp.zeros_like, nnx.state(model, nnx.Param))
        grads = nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=nnx.Carry)(zeros, model, (xs, ys))
        optimizer.update(model, grads)

    with watch(model, steps="marked", display=False) as w:
        for k in range(2):
            step(model, optimizer, BATCHES[2 * k : 2 * k + 2], TARGETS[2 * k : 2 * k + 2])
            w.step()
    assert_trained_as_without_a_watch(model, micro_batches=2)
    assert_two_steps_of_two_micro_batches(w)


def test_counting_calls_a_watch_refuses_marks_and_says_how_to_count_by_them():
    model, _ = fresh()
    with watch(model, display=False) as w, pytest.raises(RuntimeError, match="steps='marked'"):
        w.step()


def test_a_style_flax_refuses_in_tree_mode_fails_the_same_way_watched():
    """``argnums=DiffState(...)`` under tree mode: Flax's own error, with or without a watch."""

    def attempt(watched):
        model, optimizer = fresh()
        with nnx.set_graph_mode(False):

            @nnx.jit
            def step(model, optimizer, x, y):
                grads = nnx.grad(loss_fn, argnums=nnx.DiffState(0, nnx.Param))(model, x, y)
                optimizer.update(model, grads)

            with pytest.raises(ValueError) as raised:
                if watched:
                    with watch(model, display=False):
                        step(model, optimizer, BATCHES[0], TARGETS[0])
                else:
                    step(model, optimizer, BATCHES[0], TARGETS[0])
        return str(raised.value)

    plain = attempt(watched=False)
    assert "cannot contain `DiffState`" in plain
    assert attempt(watched=True) == plain


def test_a_block_where_only_a_copy_the_watch_does_not_know_sowed_says_so():
    """A copy made with copy.deepcopy has modules of the model's classes that are not the model's."""
    import copy

    from jaxcapture_nb import JaxCaptureWarning

    model, _ = fresh()
    twin = copy.deepcopy(model)
    message = r"not part of the model \(1 by SowingRegressor\).*copy.deepcopy"
    with pytest.warns(JaxCaptureWarning, match=message), watch(model, display=False) as w:
        twin(BATCHES[0])
    assert list(w.stream.series) == []
    # Another instance is left alone when the model itself records.
    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxCaptureWarning)
        with watch(model, display=False) as w:
            model(BATCHES[0])
            twin(BATCHES[0])
    assert [s.label for s in w.stream.series.values()] == [SITE]


def test_a_block_whose_step_was_only_traced_says_nothing_was_recorded():
    from jaxcapture_nb import JaxCaptureWarning

    model, _ = fresh()
    step = nnx.jit(loss_fn)
    with pytest.warns(JaxCaptureWarning, match="never ran"), capture(model) as cap:
        step.lower(model, BATCHES[0], TARGETS[0])
    assert cap.records == []


def test_accumulation_in_one_step_names_each_forward_pass_once():
    """Three value_and_grad calls in one compiled step: three values, named ``activation``, ``[1]``, ``[2]``."""
    model, optimizer = fresh()

    @nnx.jit
    def step(model, optimizer, x, y):
        total = None
        for _ in range(3):
            _, grads = nnx.value_and_grad(loss_fn)(model, x, y)
            total = grads if total is None else jax.tree.map(jnp.add, total, grads)
        optimizer.update(model, total)

    with watch(model, display=False) as w:
        for i in range(2):
            step(model, optimizer, BATCHES[i], TARGETS[i])
    series = {s.label: s for s in w.stream.series.values()}
    assert sorted(series) == [SITE, f"{SITE}[1]", f"{SITE}[2]"]
    # Each forward pass of a step sees the same parameters: the three values are the step's activation.
    model, _ = fresh()
    want = [activation_mean(model, BATCHES[0])]
    for s in series.values():
        assert s.steps[: s.size].tolist() == [0, 1]
        np.testing.assert_allclose(s.stats[:1, s.columns.index("mean")], want, rtol=1e-5)


AFTER_THE_BLOCK = sorted(MADE_BEFORE)


@pytest.mark.parametrize("name", AFTER_THE_BLOCK)
def test_a_step_made_inside_the_block_keeps_training_after_it(name):
    """The next cell of a notebook calls the step again: it trains on, donated or not, and the model is whole."""
    model, optimizer = fresh()
    attributes = {path: sorted(vars(m)) for path, m in nnx.iter_modules(model)}
    with watch(model, display=False) as w:
        if name.startswith("cached_partial"):
            step = nnx.jit(train_step, donate_argnums=(0, 1) if name.endswith("donated") else ())
            cached = nnx.cached_partial(step, model, optimizer)

            def train(i):
                cached(BATCHES[i], TARGETS[i])

        else:
            graphdef, state = nnx.split((model, optimizer))

            @functools.partial(jax.jit, donate_argnums=(0,) if name.endswith("donated") else ())
            def step(state, x, y):
                model, optimizer = nnx.merge(graphdef, state)
                train_step(model, optimizer, x, y)
                return nnx.state((model, optimizer))

            def train(i):
                nonlocal state
                state = step(state, BATCHES[i], TARGETS[i])
                nnx.update((model, optimizer), state)

        for i in range(STEPS - 1):
            train(i)
    train(STEPS - 1)  # after the block
    assert_trained_as_without_a_watch(model)
    assert {path: sorted(vars(m)) for path, m in nnx.iter_modules(model)} == attributes
    activation = next(iter(w.stream.series.values()))
    assert activation.steps[: activation.size].tolist() == list(range(STEPS - 1))
    # The model works on, eagerly and in a step made afresh.
    assert np.isfinite(float(loss_fn(model, BATCHES[0], TARGETS[0])))
    nnx.jit(train_step)(model, optimizer, BATCHES[0], TARGETS[0])


REMAT_SITES = [
    "moe.router.__call__",
    "moe.router_logits",
    "moe.router_weights",
    "moe.expert_choices",
    "moe.up.__call__",
    "moe.block",
    "moe.__call__",
    "head.__call__",
    "__call__",
]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "nnx.jit"])
def test_a_capture_records_what_a_remat_without_graph_updates_sows(jitted):
    """``nnx.remat(Class.block, graph_updates=False)(self, x)``: every value sowed inside, and the block's output."""
    from models import RematRouterNet

    model = RematRouterNet(nnx.Rngs(0))
    x = BATCHES[0][:, :3] @ jnp.ones((3, 4))
    call = nnx.jit(lambda m, x: m(x)) if jitted else (lambda m, x: m(x))
    with capture(model, methods=True) as cap:
        call(model, x)
    assert [r.site for r in cap.records] == REMAT_SITES
    logits = next(r.value for r in cap.records if r.site == "moe.router_logits")
    np.testing.assert_allclose(logits, model.moe.router(x), rtol=1e-6)


def test_a_watch_records_a_remat_without_graph_updates_in_a_training_step():
    from models import RematRouterNet

    model = RematRouterNet(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = BATCHES[0][:, :3] @ jnp.ones((3, 4))

    @nnx.jit
    def step(model, optimizer, x):
        grads = nnx.grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)

    with watch(model, methods=True, display=False) as w:
        for _ in range(3):
            step(model, optimizer, x)
    rows = {s.label: s.steps[: s.size].tolist() for s in w.stream.series.values()}
    assert rows == {site: [0, 1, 2] for site in REMAT_SITES}


def test_a_forward_helper_that_returns_no_state_says_why_nothing_was_recorded_and_how_to_keep_it():
    """bonsai's ``forward(graphdef, state, x)``: jitted, merges the model, returns the logits alone."""
    from jaxcapture_nb import JaxCaptureWarning

    @jax.jit
    def forward(graphdef, state, x):
        return nnx.merge(graphdef, state)(x)

    @jax.jit
    def forward_and_state(graphdef, state, x):
        model = nnx.merge(graphdef, state)
        return model(x), nnx.state(model)

    model, _ = fresh()
    with pytest.warns(JaxCaptureWarning, match=r"returns no state.*also returns nnx.state\(model\)"):
        with capture(model, methods=True) as cap:
            forward(*nnx.split(model), BATCHES[0])
    assert cap.records == []
    assert "values were sowed, none recorded" in cap.table() and "nothing was sowed" not in cap.table()
    # Each fix the message names records the forward pass.
    with capture(model, methods=True) as returned:
        forward_and_state(*nnx.split(model), BATCHES[0])
    graphdef, state = nnx.split(model)
    with capture(model, methods=True) as split_before:
        forward(graphdef, state, BATCHES[0])
    for fixed in (returned, split_before):
        assert [r.site for r in fixed.records] == ["hidden.__call__", SITE, "out.__call__", "__call__"]
        np.testing.assert_allclose(np.mean(fixed[SITE]), activation_mean(model, BATCHES[0]), rtol=1e-5)
