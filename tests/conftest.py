"""Shared fixtures: small real Flax models, NNX and Linen."""

import jax
import jax.numpy as jnp
import pytest
from flax import linen as nn
from flax import nnx

# Strict JAX: silent rank promotion hides shape bugs.
jax.config.update("jax_numpy_rank_promotion", "raise")


class ConvNet(nnx.Module):
    """A small CNN with the layers whose behaviour users most want to see."""

    def __init__(self, rngs: nnx.Rngs):
        self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.head = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.bn(self.conv(x)))
        self.sow(nnx.Intermediate, "features", h)
        h = self.dropout(h).reshape(x.shape[0], -1)
        logits = self.head(h)
        self.sow(nnx.Intermediate, "logits", logits)
        return logits


class Block(nnx.Module):
    def __init__(self, width: int, rngs: nnx.Rngs):
        self.linear = nnx.Linear(width, width, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.linear(x))
        self.sow(nnx.Intermediate, "act", h)
        return h


class Stack(nnx.Module):
    """Layers created with nnx.vmap and run with nnx.scan (stacked parameters)."""

    def __init__(self, depth: int, width: int, rngs: nnx.Rngs):
        @nnx.split_rngs(splits=depth)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def make(rngs):
            return Block(width, rngs)

        self.blocks = make(rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def body(x, block):
            return block(x)

        return body(x, self.blocks)


class LinenNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(8)(x))
        self.sow("intermediates", "hidden", h)
        return nn.Dense(2)(h)


@pytest.fixture
def convnet():
    return ConvNet(nnx.Rngs(0))


@pytest.fixture
def images():
    return jax.random.normal(jax.random.key(1), (2, 8, 8, 1))


@pytest.fixture
def stack():
    return Stack(depth=3, width=6, rngs=nnx.Rngs(0))


@pytest.fixture
def linen_net():
    module = LinenNet()
    variables = module.init(jax.random.key(0), jnp.ones((1, 4)))
    return module, variables
