"""Gradients of perturbed values: capture(grads=True) and capture_grads()."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxcapture_nb import Gradient, JaxCaptureWarning, capture, capture_grads


class Perturbed(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.first = nnx.Linear(3, 8, rngs=rngs)
        self.second = nnx.Linear(8, 2, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)

    def hidden(self, x):
        return nnx.relu(self.bn(self.first(x)))

    def __call__(self, x):
        h = self.perturb("hidden", self.hidden(x))
        self.sow(nnx.Intermediate, "logits", out := self.second(h))
        return out


def loss_fn(model, x):
    return jnp.mean(model(x) ** 2)


@pytest.fixture
def model():
    return Perturbed(nnx.Rngs(0))


@pytest.fixture
def x():
    return jax.random.normal(jax.random.key(1), (5, 3))


def by_hand(model, x):
    """d loss / d hidden, from jax.grad with the model split at the hidden value."""
    probe = nnx.clone(model)
    hidden = probe.hidden(x)
    return jax.grad(lambda h: jnp.mean(probe.second(h) ** 2))(hidden), hidden


def test_capture_grads_matches_jax_grad_by_hand(model, x):
    want_grad, want_hidden = by_hand(model, x)
    cap = capture_grads(loss_fn, model, x)
    kinds = {(r.var_type, r.name): r for r in cap.records}
    assert set(kinds) == {(nnx.Perturbation, "hidden"), (Gradient, "hidden"), (nnx.Intermediate, "logits")}
    np.testing.assert_allclose(kinds[Gradient, "hidden"].value, want_grad, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(kinds[nnx.Perturbation, "hidden"].value, want_hidden, rtol=1e-5)
    assert kinds[Gradient, "hidden"].summary is not None


def test_capture_grads_leaves_the_model_as_it_was(model, x):
    before = nnx.clone(nnx.state(model))
    capture_grads(loss_fn, model, x)
    jax.tree.map(np.testing.assert_array_equal, nnx.state(model), before)
    assert not hasattr(model, "hidden_perturbation") and "__captures__" not in vars(model)


def test_grads_are_recorded_from_an_unchanged_jitted_train_step(model, x):
    optimizer = nnx.Optimizer(model, optax.sgd(0.0), wrt=nnx.Param)
    traces = []

    @nnx.jit
    def train_step(model, optimizer, x):
        traces.append(1)
        loss, grads = nnx.value_and_grad(loss_fn)(model, x)
        optimizer.update(model, grads)
        return loss

    want_grad, _ = by_hand(model, x)
    with capture(model, grads=True, keep="last") as cap:
        for _ in range(4):
            train_step(model, optimizer, x)
    (grad,) = [r for r in cap.records if r.var_type is Gradient]
    assert len(traces) <= 2  # keep="last": the sowed state settles after one call
    # Batch statistics normalize in train mode, and lr=0 keeps the weights,
    # so every call's gradient equals the one computed by hand.
    np.testing.assert_allclose(grad.value, want_grad, rtol=1e-5, atol=1e-7)


def test_keep_summary_sends_summaries_of_gradients_not_tensors(model, x):
    optimizer = nnx.Optimizer(model, optax.sgd(0.0), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(loss_fn)(model, x)
        optimizer.update(model, grads)
        return loss

    want_grad, _ = by_hand(model, x)
    with capture(model, grads=True, keep="summary") as cap:
        for _ in range(3):
            train_step(model, optimizer, x)
    (grad,) = [r for r in cap.records if r.var_type is Gradient]
    assert grad.value is None and grad.shape == want_grad.shape
    assert float(grad.summary.mean) == pytest.approx(float(want_grad.mean()), rel=1e-4, abs=1e-9)


def test_grads_need_an_nnx_model():
    from flax import linen as nn

    with pytest.raises(TypeError, match="grads=True"):
        capture(nn.Dense(2), grads=True)
    with pytest.raises(TypeError, match="nnx.Module"):
        capture_grads(loss_fn, nn.Dense(2), jnp.ones(2))


def test_values_and_gradients_are_recorded_in_execution_order_call_by_call():
    class Model(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(3, 4, rngs=rngs)
            self.b = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            h = self.perturb("h", self.a(x))
            y = self.b(nnx.relu(h))
            self.sow(nnx.Intermediate, "logits", y)
            return y

    model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
    order = [("Perturbation", "h"), ("Intermediate", "logits"), ("Gradient", "h")]
    cap = capture_grads(lambda m, x: m(x).sum(), model, x)
    assert [(r.var_type.__name__, r.site) for r in cap.records] == order
    # A compiled step sends h and its gradient by callback and hands logits
    # back as it returns: each call's records still follow its execution.
    step = nnx.jit(nnx.grad(lambda m, x: m(x).sum()))
    with capture(model, grads=True) as cap:
        for _ in range(2):
            step(model, x)
    assert [(r.var_type.__name__, r.site, r.call_index) for r in cap.records] == [
        (*site, call) for call in (0, 1) for site in order
    ]


class NeverPerturbs(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x):
        self.sow(nnx.Intermediate, "logits", out := self.linear(x))
        return out


NOTHING_PERTURBED = r'grads=True recorded no gradients: no value passed through Module\.perturb\. .*`x = self\.perturb\("hidden", x\)`'


def test_grads_on_a_model_that_never_perturbs_warn_once_at_the_callers_line(x):
    model = NeverPerturbs(nnx.Rngs(0))
    step = nnx.jit(nnx.grad(lambda m, x: m(x).sum()))
    with pytest.warns(JaxCaptureWarning, match=NOTHING_PERTURBED) as caught:
        with capture(model, grads=True) as cap:
            for _ in range(3):
                step(model, x)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert [r.site for r in cap.records] == ["logits"] * 3  # what was sowed is still recorded
    with pytest.warns(JaxCaptureWarning, match=NOTHING_PERTURBED) as caught:
        capture_grads(lambda m, x: m(x).sum(), model, x)
    assert len(caught) == 1 and caught[0].filename == __file__


def test_an_include_that_keeps_no_perturbed_value_warns_and_says_so(model, x):
    with pytest.warns(JaxCaptureWarning, match=r"Module\.perturb, or include='logits' kept none of them"):
        with capture(model, grads=True, include="logits") as cap:
            nnx.grad(loss_fn)(model, x)
    assert [r.site for r in cap.records] == ["logits"]


def test_grads_on_a_model_that_perturbs_do_not_warn(model, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxCaptureWarning)
        with capture(model, grads=True, keep="summary"):
            nnx.jit(nnx.grad(loss_fn))(model, x)
        capture_grads(loss_fn, model, x)
        # A block that raises does not add a warning to the error.
        with pytest.raises(KeyError), capture(NeverPerturbs(nnx.Rngs(0)), grads=True):
            raise KeyError("inside")


def test_the_capture_view_names_values_and_gradients_in_words_and_shows_each_gradient_beside_its_value():
    class TwoPerturbed(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(3, 4, rngs=rngs)
            self.b = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            h = self.perturb("first", self.a(x))
            return self.perturb("second", self.b(nnx.relu(h)))

    model, x = TwoPerturbed(nnx.Rngs(0)), jnp.ones((2, 3))
    cap = capture_grads(lambda m, x: m(x).sum(), model, x)
    # Recorded as the backward pass ran: the second value's gradient first.
    assert [(r.var_type.__name__, r.name) for r in cap.records] == [
        ("Perturbation", "first"),
        ("Perturbation", "second"),
        ("Gradient", "second"),
        ("Gradient", "first"),
    ]
    view = cap.show()
    assert [(s["name"], s["type"]) for s in view._sites] == [
        ("first", "activation"),
        ("first", "gradient"),
        ("second", "activation"),
        ("second", "gradient"),
    ]
    # The saved table reads alike; each row's statistics are its own record's.
    page = view._repr_mimebundle_()[0]["text/html"]
    assert page.index("<td>first</td><td>activation</td>") < page.index("<td>first</td><td>gradient</td>")
    assert page.index("<td>first</td><td>gradient</td>") < page.index("<td>second</td><td>activation</td>")
    by_row = np.frombuffer(view._stats, np.float64).reshape(4, -1)
    mean = list(view._stat_columns).index("mean")
    grad_first = next(r for r in cap.records if r.var_type is Gradient and r.name == "first")
    np.testing.assert_allclose(by_row[1, mean], np.mean(np.asarray(grad_first.value)), rtol=1e-5)
    assert "gradient" in cap.table() and "activation" in cap.table()
