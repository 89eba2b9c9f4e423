"""Small real Flax models the tests share: NNX (CNN, stacked blocks) and Linen."""

from flax import linen as nn
from flax import nnx


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
