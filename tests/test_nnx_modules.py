"""The quick module walk finds what nnx.iter_modules finds, with the same paths, and a capture uses it."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from models import ConvNet, ModeNet, SowingLinear, Stack

from jaxcapture_nb import capture
from jaxcapture_nb.backends.nnx import modules as nnx_modules
from jaxcapture_nb.backends.nnx.hooks import capture_of


class Shared(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(2, 2, rngs=rngs)
        self.second = self.first


class PlainList(nnx.Module):
    def __init__(self, rngs):
        self.blocks = nnx.data([nnx.Linear(2, 2, rngs=rngs), (nnx.Linear(2, 2, rngs=rngs),)])


class Containers(nnx.Module):
    def __init__(self, rngs):
        self.seq = nnx.Sequential(nnx.Linear(2, 2, rngs=rngs), nnx.relu, nnx.Dropout(0.1, rngs=rngs))
        self.named = nnx.Dict(
            {"norm": nnx.LayerNorm(2, rngs=rngs), "embeds": nnx.List([nnx.Embed(3, 2, rngs=rngs)])}
        )
        self.attention = nnx.MultiHeadAttention(2, 4, rngs=rngs, decode=False)
        self.cell = nnx.LSTMCell(2, 3, rngs=rngs)
        self.config = {"sizes": (2, 3), "name": "containers"}


def walked_quickly(model) -> bool:
    try:
        nnx_modules._quick_walk(model)
    except nnx_modules._LeaveToFlax:
        return False
    return True


@pytest.mark.parametrize(
    ("make", "quick"),
    [
        (lambda rngs: ConvNet(rngs), True),
        (lambda rngs: Containers(rngs), True),
        (lambda rngs: ModeNet(rngs), True),
        (lambda rngs: Stack(3, 4, rngs), True),
        (lambda rngs: Shared(rngs), False),
        (lambda rngs: PlainList(rngs), False),
    ],
)
def test_the_walk_matches_flax(make, quick):
    model = make(nnx.Rngs(0))
    found = [(path, id(m)) for path, m in nnx_modules.iter_modules(model)]
    assert sorted(found, key=str) == sorted(((p, id(m)) for p, m in nnx.iter_modules(model)), key=str)
    assert len(found) == len(set(found))
    # Structures the quick walk cannot name as Flax does are left to Flax.
    assert walked_quickly(model) is quick


def test_a_module_added_between_walks_is_found():
    model = ConvNet(nnx.Rngs(0))
    before = {path for path, _ in nnx_modules.iter_modules(model)}
    model.extra = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
    after = {path for path, _ in nnx_modules.iter_modules(model)}
    assert after - before == {("extra",)}


class Tower(nnx.Module):
    """Layers held in an nnx.List, an nnx.List inside it, and an nnx.Dict."""

    def __init__(self, rngs):
        self.layers = nnx.List([SowingLinear(rngs), nnx.List([SowingLinear(rngs)]), SowingLinear(rngs)])
        self.heads = nnx.Dict({"main": SowingLinear(rngs)})

    def __call__(self, x):
        x = self.layers[1][0](self.layers[0](x))
        return self.heads["main"](self.layers[2](x))


# Flax's own nnx.capture leaves nnx.List nodes out from Flax 0.12.9 on; the layers inside
# them are captured all the same, on every supported release.
TOWER_SITES = [
    "__call__",
    "heads.main.__call__",
    "heads.main.linear.__call__",
    "heads.main.y",
    "layers.0.__call__",
    "layers.0.linear.__call__",
    "layers.0.y",
    "layers.1.0.__call__",
    "layers.1.0.linear.__call__",
    "layers.1.0.y",
    "layers.2.__call__",
    "layers.2.linear.__call__",
    "layers.2.y",
]


def call(model, x):
    return model(x)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_layers_held_in_nnx_lists_are_captured(jit):
    model = Tower(nnx.Rngs(0))
    x = jnp.ones((1, 2))
    run = nnx.jit(call) if jit else call
    with capture(model, methods=True) as cap:
        # Only the layers are known to the capture: the containers never sow.
        assert capture_of(model.layers)[0] is None and capture_of(model.layers[1])[0] is None
        assert (
            capture_of(model.layers[1][0])[0] is not None and capture_of(model.heads["main"])[0] is not None
        )
        run(model, x)
    assert sorted(r.site for r in cap.records) == TOWER_SITES
    _, flax_own = nnx.capture(nnx.clone(model), nnx.Intermediate, method_outputs=nnx.Intermediate)(x)
    assert sorted(".".join(map(str, path)) for path, _ in nnx.to_flat_state(flax_own)) == TOWER_SITES
    by_site = {r.site: r for r in cap.records}
    np.testing.assert_array_equal(by_site["layers.1.0.y"].value, flax_own["layers"][1][0]["y"].get_value()[0])
