"""The quick module walk finds what nnx.iter_modules finds, with the same paths."""

import pytest
from flax import nnx
from models import ConvNet, ModeNet, Stack

from jaxcapture_nb._backends import nnx_modules


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
