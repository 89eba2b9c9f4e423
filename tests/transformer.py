"""A small decoder-only transformer and a Linen LSTM, written the way published models are.

The NNX model follows the layout of Gemma-style models: grouped-query
attention with rotary positions, blocks that return ``(cache, x)``, causal
logits masked with a large negative constant rather than -inf, a router that
picks its experts with ``jax.lax.top_k``, RMSNorm, dropout, tied embeddings,
and the blocks held in an ``nnx.List`` or stacked with ``nnx.vmap`` and run
with ``nnx.scan`` over ``nnx.remat``. It sows what such models sow: masked
logits, top-k values and indices, and tuples and dicts of activations.

The Linen model runs an LSTM cell with ``nn.scan`` and sows from inside the
scanned cell.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn
from flax import nnx

# Published models fill masked attention logits with this finite constant
# (close to the float32 minimum) instead of -inf, so softmax never sees inf - inf.
MASK_VALUE = -2.3819763e38


def rotary(x: jax.Array, positions: jax.Array, base: float = 10_000.0) -> jax.Array:
    """Rotary position embedding of ``x`` [batch, time, heads, head_dim]."""
    half = x.shape[-1] // 2
    frequencies = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = positions[:, :, None, None].astype(jnp.float32) * frequencies[None, None, None, :]
    sin, cos = jnp.sin(angles), jnp.cos(angles)
    first, second = x[..., :half], x[..., half:]
    return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes and switches of a :class:`Transformer`; tiny by default.

    Attributes:
      sow_intermediates: sow masked logits, router choices, activations and
        top next-token candidates; off, the model sows nothing (a baseline).
      sow_activations_only: with ``sow_intermediates``, sow only values the
        model computes anyway: the scaled embedding, and the residual stream
        after attention and after the mixture of experts.
      perturb_activations: pass the attention output and the experts' hidden
        activations through ``Module.perturb``, to read their gradients.
    """

    vocab: int = 32
    width: int = 16
    hidden: int = 32
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    num_experts: int = 4
    top_k: int = 2
    dropout: float = 0.25
    sow_intermediates: bool = True
    sow_activations_only: bool = False
    perturb_activations: bool = False

    @property
    def sows_extras(self) -> bool:
        """Whether to sow the masked logits, router choices, expert activations and next-token candidates."""
        return self.sow_intermediates and not self.sow_activations_only


class Attention(nnx.Module):
    """Grouped-query attention: ``num_heads`` query heads share ``num_kv_heads`` key/value heads."""

    def __init__(self, config: Config, *, rngs: nnx.Rngs):
        self.config = config
        self.head_dim = config.width // config.num_heads
        self.query = nnx.Linear(config.width, config.num_heads * self.head_dim, use_bias=False, rngs=rngs)
        self.key_value = nnx.Linear(
            config.width, 2 * config.num_kv_heads * self.head_dim, use_bias=False, rngs=rngs
        )
        self.out = nnx.Linear(config.num_heads * self.head_dim, config.width, use_bias=False, rngs=rngs)

    def __call__(
        self, x: jax.Array, positions: jax.Array, cache: dict[str, jax.Array] | None = None
    ) -> tuple[dict[str, jax.Array] | None, jax.Array]:
        c = self.config
        batch, time, _ = x.shape
        q = self.query(x).reshape(batch, time, c.num_heads, self.head_dim)
        kv = self.key_value(x).reshape(batch, time, 2 * c.num_kv_heads, self.head_dim)
        k, v = jnp.split(kv, 2, axis=2)
        q, k = rotary(q, positions), rotary(k, positions)
        if cache is None:
            new_cache, key_positions = None, positions
        else:
            # Decoding: write the new keys and values at end_index and attend to the whole cache.
            start = cache["end_index"]
            k = jax.lax.dynamic_update_slice(cache["k"], k, (0, start, 0, 0))
            v = jax.lax.dynamic_update_slice(cache["v"], v, (0, start, 0, 0))
            new_cache = {"k": k, "v": v, "end_index": start + time}
            key_positions = jnp.broadcast_to(jnp.arange(k.shape[1]), (batch, k.shape[1]))
        groups = c.num_heads // c.num_kv_heads
        k, v = jnp.repeat(k, groups, axis=2), jnp.repeat(v, groups, axis=2)
        logits = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(jnp.float32(self.head_dim))
        causal = key_positions[:, None, None, :] <= positions[:, None, :, None]
        logits = jnp.where(causal, logits, MASK_VALUE)
        if c.sows_extras:
            self.sow(nnx.Intermediate, "logits", logits)
        probs = jax.nn.softmax(logits, axis=-1)
        out = jnp.einsum("bhts,bshd->bthd", probs, v).reshape(batch, time, -1)
        return new_cache, self.out(out)


class MixtureOfExperts(nnx.Module):
    """A feed-forward layer of ``num_experts`` gated experts; a router picks ``top_k`` per token."""

    def __init__(self, config: Config, *, rngs: nnx.Rngs):
        self.config = config
        self.router = nnx.Linear(config.width, config.num_experts, use_bias=False, rngs=rngs)
        init = nnx.initializers.lecun_normal()
        expert_in = (config.num_experts, config.width, config.hidden)
        self.gate = nnx.Param(init(rngs.params(), expert_in))
        self.up = nnx.Param(init(rngs.params(), expert_in))
        self.down = nnx.Param(init(rngs.params(), (config.num_experts, config.hidden, config.width)))
        self.dropout = nnx.Dropout(config.dropout, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.config
        weights, experts = jax.lax.top_k(self.router(x), c.top_k)
        if c.sows_extras:
            # Not "router": in Flax's own nnx.capture a sow named like a
            # submodule replaces that submodule's recorded outputs.
            self.sow(nnx.Intermediate, "top_experts", (weights, experts))
        weights = jax.nn.softmax(weights, axis=-1)
        # A tiny model runs every expert and keeps the chosen ones' outputs.
        combine = jnp.sum(jax.nn.one_hot(experts, c.num_experts) * weights[..., None], axis=-2)
        gate = jnp.einsum("btw,ewh->bteh", x, self.gate[...])
        h = jax.nn.gelu(gate) * jnp.einsum("btw,ewh->bteh", x, self.up[...])
        if c.perturb_activations:
            h = self.perturb("hidden", h)
        if c.sows_extras:
            self.sow(nnx.Intermediate, "pair", (h, 2 * h))
        out = jnp.einsum("bteh,ehw->btew", self.dropout(h), self.down[...])
        return jnp.einsum("btew,bte->btw", out, combine)


class Block(nnx.Module):
    """Pre-norm residual block; returns ``(cache, x)`` as Gemma's blocks do."""

    def __init__(self, config: Config, *, rngs: nnx.Rngs):
        self.config = config
        self.attention_norm = nnx.RMSNorm(config.width, rngs=rngs)
        self.attn = Attention(config, rngs=rngs)
        self.mlp_norm = nnx.RMSNorm(config.width, rngs=rngs)
        self.mlp = MixtureOfExperts(config, rngs=rngs)
        self.dropout = nnx.Dropout(config.dropout, rngs=rngs)

    def __call__(
        self, x: jax.Array, positions: jax.Array, cache: dict[str, jax.Array] | None = None
    ) -> tuple[dict[str, jax.Array] | None, jax.Array]:
        cache, h = self.attn(self.attention_norm(x), positions, cache)
        if self.config.perturb_activations:
            h = self.perturb("attn_out", h)
        x = attended = x + self.dropout(h)
        x = x + self.dropout(self.mlp(self.mlp_norm(x)))
        if self.config.sow_intermediates:
            self.sow(nnx.Intermediate, "residual", {"attn": attended, "mlp": x})
        return cache, x


class Transformer(nnx.Module):
    """A decoder-only language model returning ``(logits, cache)``.

    Args:
      config: the sizes and switches.
      scan_layers: stack the blocks (``nnx.vmap`` at construction) and run
        them with ``nnx.scan``; otherwise hold them in an ``nnx.List``.
      remat: rematerialize each block in the backward pass (``nnx.remat``).
      rngs: parameter and dropout keys.
    """

    def __init__(self, config: Config, *, scan_layers: bool = False, remat: bool = False, rngs: nnx.Rngs):
        self.config = config
        self.scan_layers, self.remat = scan_layers, remat
        self.embed = nnx.Embed(config.vocab, config.width, rngs=rngs)
        if scan_layers:

            @nnx.split_rngs(splits=config.num_layers)
            @nnx.vmap(in_axes=(0,), out_axes=0)
            def make(rngs: nnx.Rngs) -> Block:
                return Block(config, rngs=rngs)

            self.blocks = make(rngs)
        else:
            self.blocks = nnx.List([Block(config, rngs=rngs) for _ in range(config.num_layers)])
        self.final_norm = nnx.RMSNorm(config.width, rngs=rngs)

    def init_cache(self, batch: int, length: int) -> list[dict[str, jax.Array]]:
        """Empty key/value caches, one per block, for decoding up to ``length`` tokens."""
        c = self.config
        shape = (batch, length, c.num_kv_heads, c.width // c.num_heads)
        return [
            {"k": jnp.zeros(shape), "v": jnp.zeros(shape), "end_index": jnp.zeros((), jnp.int32)}
            for _ in range(c.num_layers)
        ]

    def __call__(
        self, tokens: jax.Array, cache: list[dict[str, jax.Array]] | None = None
    ) -> tuple[jax.Array, list[dict[str, jax.Array]] | None]:
        batch, time = tokens.shape
        start = jnp.int32(0) if cache is None else cache[0]["end_index"]
        positions = jnp.broadcast_to(start + jnp.arange(time), (batch, time))
        x = self.embed(tokens) * jnp.sqrt(jnp.float32(self.config.width))
        if self.config.sow_intermediates and self.config.sow_activations_only:
            self.sow(nnx.Intermediate, "embedding", x)
        if self.scan_layers:
            if cache is not None:
                raise ValueError("the scan-stacked variant does not decode with a cache")
            x = self._scan_blocks(x, positions)
            new_cache = None
        else:
            new_cache = None if cache is None else []
            run = nnx.remat(_call_block) if self.remat else _call_block
            for i, block in enumerate(self.blocks):
                layer_cache, x = run(block, x, positions, None if cache is None else cache[i])
                if new_cache is not None:
                    new_cache.append(layer_cache)
        logits = self.embed.attend(self.final_norm(x))
        if self.config.sows_extras:
            values, ids = jax.lax.top_k(logits[:, -1], 4)
            self.sow(nnx.Intermediate, "next_token_logits", values)
            self.sow(nnx.Intermediate, "next_token_ids", ids)
        return logits, new_cache

    def _scan_blocks(self, x: jax.Array, positions: jax.Array) -> jax.Array:
        def body(x: jax.Array, block: Block) -> jax.Array:
            return block(x, positions)[1]

        if self.remat:
            body = nnx.remat(body)
        return nnx.scan(body, in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)(x, self.blocks)


def _call_block(block: Block, x: jax.Array, positions: jax.Array, cache: Any) -> tuple[Any, jax.Array]:
    return block(x, positions, cache)


def next_token_loss(model: Transformer, tokens: jax.Array) -> jax.Array:
    """Mean cross-entropy of predicting each token from the ones before it."""
    logits, _ = model(tokens[:, :-1])
    targets = jax.nn.one_hot(tokens[:, 1:], logits.shape[-1])
    return -jnp.mean(jnp.sum(targets * jax.nn.log_softmax(logits), axis=-1))


def make_train_step(traces: list[int] | None = None):
    """An ``nnx.jit`` step of next-token loss and an optimizer update, as users write one.

    Args:
      traces: if given, each trace of the step appends to it.
    """

    @nnx.jit
    def train_step(model: Transformer, optimizer: nnx.Optimizer, tokens: jax.Array) -> jax.Array:
        if traces is not None:
            traces.append(1)
        loss, grads = nnx.value_and_grad(next_token_loss)(model, tokens)
        optimizer.update(model, grads)
        return loss

    return train_step


class SowingLSTMCell(nn.Module):
    """An LSTM cell that sows its hidden state at every step of the scan."""

    features: int

    @nn.compact
    def __call__(self, carry: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[Any, jax.Array]:
        carry, h = nn.OptimizedLSTMCell(self.features)(carry, x)
        self.sow("intermediates", "hidden", h)
        return carry, h


class LinenLSTM(nn.Module):
    """An LSTM over time (``nn.scan`` over the cell), then a dense head; sows the final carry and output."""

    features: int = 8

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scan = nn.scan(
            SowingLSTMCell,
            variable_broadcast="params",
            variable_axes={"intermediates": 0},
            split_rngs={"params": False},
            in_axes=1,
            out_axes=1,
        )
        carry = nn.OptimizedLSTMCell(self.features, parent=None).initialize_carry(
            jax.random.key(0), x[:, 0].shape
        )
        carry, hs = scan(self.features, name="lstm")(carry, x)
        self.sow("intermediates", "final_carry", carry)
        out = nn.Dense(2)(hs[:, -1])
        self.sow("intermediates", "out", out)
        return out
