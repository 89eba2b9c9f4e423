"""Sites whose value is a pytree: one record per leaf, named by its place, everywhere."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from flax import nnx

from jaxcapture_nb import capture, capture_grads, compare_modes, summarize, watch


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Output:
    y: jax.Array
    total: jax.Array


class Layer(nnx.Module):
    """Returns ``(None, Output)`` and sows a tuple and a dict with non-array leaves."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        y = self.dropout(self.linear(x))
        self.sow(nnx.Intermediate, "pair", (y, 2 * y))
        self.sow(nnx.Intermediate, "info", {"h": y, "none": None, "k": 3})
        y = self.perturb("p", y)
        return None, Output(y, y.sum())


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.layers = nnx.List([Layer(rngs) for _ in range(2)])

    def __call__(self, x):
        for layer in self.layers:
            _, out = layer(x)
            x = out.y
        return x


class Stacked(nnx.Module):
    """The same layer, three times, created with nnx.vmap and run with nnx.scan over nnx.remat."""

    def __init__(self):
        @nnx.vmap(in_axes=0, out_axes=0)
        def make(key):
            return Layer(nnx.Rngs(key))

        self.layers = make(jax.random.split(jax.random.key(0), 3))

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        @nnx.remat
        def body(x, layer):
            return layer(x)[1].y

        return body(x, self.layers)


LEAF_SITES = ["pair[0]", "pair[1]", "info['h']"]
METHOD_SITES = ["__call__[1].y", "__call__[1].total"]


def _sites(cap):
    return [r.site for r in cap.records]


@pytest.mark.parametrize("keep", ["all", "last", "summary"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_each_leaf_is_a_record_named_by_its_place(keep, jit):
    model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
    run = nnx.jit(lambda m, x: m(x)) if jit else (lambda m, x: m(x))
    with capture(model, methods=True, keep=keep) as cap:
        run(model, x)
    by_site = {r.site: r for r in cap.records}
    for i in range(2):
        for name in [*LEAF_SITES, *METHOD_SITES, "linear.__call__"]:
            assert by_site[f"layers.{i}.{name}"].summary is not None, name
        # A None leaf makes no site; a non-array leaf has a record and no summary.
        assert f"layers.{i}.info['none']" not in by_site
        assert by_site[f"layers.{i}.info['k']"].summary is None
        assert by_site[f"layers.{i}.__call__[1].total"].shape == ()
    pair0, pair1 = by_site["layers.0.pair[0]"].summary, by_site["layers.0.pair[1]"].summary
    np.testing.assert_allclose(2 * pair0.stats[..., :4], pair1.stats[..., :4], rtol=1e-6)
    if keep != "summary":
        np.testing.assert_allclose(by_site["layers.1.__call__[1].y"].value, by_site["__call__"].value)


def test_values_equal_flax_own_capture_under_jit():
    model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
    model.eval()

    @nnx.jit
    def flax_run(model, x):
        return nnx.capture(model, nnx.Intermediate, method_outputs=nnx.Intermediate)(x)

    _, theirs = flax_run(model, x)
    with capture(model, methods=True) as cap:
        nnx.jit(lambda m, x: m(x))(model, x)
    ours = {r.site: r.value for r in cap.records}
    for i in range(2):
        (pair,) = theirs["layers"][i]["pair"].get_value()
        np.testing.assert_allclose(ours[f"layers.{i}.pair[1]"], pair[1])
        ((_, output),) = theirs["layers"][i]["__call__"].get_value()
        np.testing.assert_allclose(ours[f"layers.{i}.__call__[1].total"], output.total)


def test_a_jitted_call_records_non_array_leaves_once_per_call():
    model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
    model.eval()
    step = nnx.jit(lambda m, x: m(x))
    with capture(model) as cap:
        step(model, x)
        step(model, x)
    calls = [r.call_index for r in cap.records if r.site == "layers.0.info['k']"]
    assert calls == [0, 1]
    assert [r.value for r in cap.records if r.site == "layers.0.info['k']"] == [3, 3]


@pytest.mark.parametrize("keep", ["all", "last", "summary"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_scan_stacked_leaves_keep_their_layer_axis(keep, jit):
    model, x = Stacked(), jnp.ones((2, 3))
    run = nnx.jit(lambda m, x: m(x)) if jit else (lambda m, x: m(x))
    with capture(model, keep=keep) as cap:
        run(model, x)
    by_site = {r.site: r for r in cap.records}
    assert by_site["layers.pair[1]"].shape == (3, 2, 3)
    # Summaries made inside the scan keep one summary per layer.
    assert by_site["layers.pair[1]"].summary.stacked_shape == ((3,) if keep == "summary" else ())


def test_watch_streams_every_array_leaf():
    model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
    step = nnx.jit(lambda m, x: m(x).sum())
    with watch(model, display=False) as w:
        for _ in range(3):
            step(model, x)
    series = {s.label: s for s in w.stream.series.values()}
    assert set(series) == {f"layers.{i}.{name}" for i in range(2) for name in LEAF_SITES}
    assert all(s.size == 3 for s in series.values())


def test_gradients_of_a_perturbed_pytree_reach_each_leaf():
    class Pairs(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.arange(3.0))

        def __call__(self, x):
            a, b = self.perturb("ab", (self.w * x, 2 * self.w * x))
            return jnp.sum(3 * a + b)

    cap = capture_grads(lambda m, x: m(x), Pairs(), jnp.ones(3))
    grads = {r.site: r.value for r in cap.records if r.var_type.__name__ == "Gradient"}
    np.testing.assert_allclose(grads["ab[0]"], [3.0, 3.0, 3.0])
    np.testing.assert_allclose(grads["ab[1]"], [1.0, 1.0, 1.0])


def test_compare_modes_gives_every_leaf_a_finite_shift():
    comparison = compare_modes(Model(nnx.Rngs(0)), jnp.ones((4, 3)))
    shifts = {s.site: s.shift for s in comparison.sites}
    assert np.isfinite([shifts[f"layers.1.{name}"] for name in [*LEAF_SITES, *METHOD_SITES]]).all()
    assert shifts["layers.0.dropout.__call__"] > 0.1  # dropout is off in eval


def test_summarize_names_no_leaf_twice():
    # summarize keeps the tree's structure; the leaf naming is only for sites.
    tree = summarize({"a": (jnp.ones(2), None)})
    assert tree["a"][1] is None and int(tree["a"][0].count) == 2


class LinenPairs(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.Dense(3)(x)
        self.sow("intermediates", "pair", (y, {"twice": 2 * y}))
        return y, y.sum()


@pytest.mark.parametrize("keep", ["all", "summary"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_linen_pytree_sows_and_tuple_outputs_split_into_leaves(keep, jit):
    module, x = LinenPairs(), jnp.ones((2, 3))
    variables = module.init(jax.random.key(0), x)
    with capture(module, methods=True, keep=keep) as cap:
        (jax.jit(module.apply) if jit else module.apply)(variables, x)
    by_site = {r.site: r for r in cap.records}
    assert {"pair[0]", "pair[1]['twice']", "__call__[0]", "__call__[1]", "Dense_0.__call__"} <= set(by_site)
    assert by_site["__call__[1]"].shape == ()
    assert float(by_site["pair[1]['twice']"].summary.mean) == pytest.approx(
        2 * float(by_site["pair[0]"].summary.mean), rel=1e-5
    )
