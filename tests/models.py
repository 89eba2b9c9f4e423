"""Small real Flax models the tests share: NNX (CNN, stacked blocks, MLPs) and Linen."""

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
    """A square dense layer with a ReLU that sows its activation as ``act``."""

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
    """A two-layer Linen MLP that sows its hidden activation as ``hidden``."""

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(8)(x))
        self.sow("intermediates", "hidden", h)
        return nn.Dense(2)(h)


class Scaled(nnx.Module):
    """A user module with a mode attribute and no ``set_view``: doubles its input in training."""

    def __init__(self):
        self.deterministic = False

    def __call__(self, x):
        return x if self.deterministic else 2.0 * x


class Gate(nnx.Module):
    """A ``set_view`` whose docstring documents only one of its two arguments."""

    def __init__(self):
        self.closed = False
        self.scale = 1.0

    def set_view(self, closed: bool | None = None, scale: float | None = None):
        """Sets the gate's mode.

        Args:
          closed: if True, the gate outputs zeros.
        """
        if closed is not None:
            self.closed = closed
        if scale is not None:
            self.scale = scale

    def __call__(self, x):
        return x * 0.0 if self.closed else x * self.scale


class ModeNet(nnx.Module):
    """Every kind of mode: Dropout, BatchNorm, LayerNorm, attention, and two user modules."""

    def __init__(self, rngs: nnx.Rngs, features: int = 8):
        self.linear = nnx.Linear(4, features, rngs=rngs)
        self.bn = nnx.BatchNorm(features, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(2, features, features, decode=False, rngs=rngs)
        self.norm = nnx.LayerNorm(features, rngs=rngs)
        self.scaled = Scaled()
        self.gate = Gate()

    def __call__(self, x):
        h = self.dropout(self.bn(self.linear(x)))
        self.sow(nnx.Intermediate, "hidden", h)
        return self.gate(self.scaled(self.norm(self.attention(h))))


class LinenModeNet(nn.Module):
    """Linen takes its modes as call arguments."""

    @nn.compact
    def __call__(self, x, train: bool):
        h = nn.Dense(8)(x)
        h = nn.BatchNorm(use_running_average=not train)(h)
        h = nn.Dropout(0.5, deterministic=not train)(h)
        self.sow("intermediates", "hidden", h)
        return nn.Dense(2)(h)


class TrainingArgumentNet(nnx.Module):
    """Switches train and eval with a ``training`` call argument that it passes down, as EfficientNet does.

    The argument wins over the view options of its BatchNorm and Dropout.
    """

    def __init__(self, rngs: nnx.Rngs, features: int = 8):
        self.linear = nnx.Linear(4, features, rngs=rngs)
        self.bn = nnx.BatchNorm(features, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.head = nnx.Linear(features, 2, rngs=rngs)

    def __call__(self, x, training: bool = False):
        h = nnx.relu(self.bn(self.linear(x), use_running_average=not training))
        h = self.dropout(h, deterministic=not training)
        self.sow(nnx.Intermediate, "hidden", h)
        return self.head(h)


class DeterministicArgumentNet(nnx.Module):
    """Switches train and eval with a ``deterministic`` call argument, as graph attention networks do.

    Its Dropout offers ``deterministic`` as a view option too.
    """

    def __init__(self, rngs: nnx.Rngs, features: int = 8):
        self.linear = nnx.Linear(4, features, rngs=rngs)
        self.bn = nnx.BatchNorm(features, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x, *, deterministic: bool = False):
        h = self.bn(self.linear(x), use_running_average=deterministic)
        return self.dropout(h, deterministic=deterministic)


class SowingRegressor(nnx.Module):
    """Two dense layers with the hidden activation sowed: the model of the training-loop tests."""

    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(3, 8, rngs=rngs)
        self.out = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.hidden(x))
        self.sow(nnx.Intermediate, "activation", h)
        return self.out(h)


class SowingLinear(nnx.Module):
    """One 2-to-2 dense layer that sows its output as ``y``."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, "y", y)
        return y


class PerturbedMLP(nnx.Module):
    """A 4-16-1 MLP whose hidden activation is perturbed as ``h`` and sowed as ``act``.

    ``hidden`` is a method of its own, so tests can compute the activation
    without the model's sows and perturbs.
    """

    def __init__(self, rngs: nnx.Rngs):
        self.first = nnx.Linear(4, 16, rngs=rngs)
        self.second = nnx.Linear(16, 1, rngs=rngs)

    def hidden(self, x):
        return nnx.relu(self.first(x))

    def __call__(self, x):
        h = self.perturb("h", self.hidden(x))
        self.sow(nnx.Intermediate, "act", h)
        return self.second(h)


class HiddenAndOutputMLP(nnx.Module):
    """A two-layer regressor that sows its hidden activation as ``hidden`` and its output as ``out``."""

    def __init__(self, rngs: nnx.Rngs, features: int = 4, hidden: int = 16):
        self.first = nnx.Linear(features, hidden, rngs=rngs)
        self.second = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.first(x))
        self.sow(nnx.Intermediate, "hidden", h)
        out = self.second(h)
        self.sow(nnx.Intermediate, "out", out)
        return out


class RematRouter(nnx.Module):
    """A mixture-of-experts layer whose block runs as ``nnx.remat(unbound method, graph_updates=False)``.

    As public Gemma-style decoders write it: the router's logits, weights and
    chosen experts are sowed inside the rematerialized block.
    """

    def __init__(self, width: int, experts: int, rngs: nnx.Rngs):
        self.router = nnx.Linear(width, experts, rngs=rngs)
        self.up = nnx.Linear(width, width, rngs=rngs)

    def block(self, x):
        logits = self.router(x)
        self.sow(nnx.Intermediate, "router_logits", logits)
        weights = nnx.softmax(logits)
        self.sow(nnx.Intermediate, "router_weights", weights)
        self.sow(nnx.Intermediate, "expert_choices", weights.argmax(-1))
        return self.up(x) * weights[..., :1]

    def __call__(self, x):
        return nnx.remat(type(self).block, graph_updates=False)(self, x)


class RematRouterNet(nnx.Module):
    """A :class:`RematRouter` and a head: the layer is a submodule, as in a decoder."""

    def __init__(self, rngs: nnx.Rngs):
        self.moe = RematRouter(4, 3, rngs)
        self.head = nnx.Linear(4, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(self.moe(x))
