"""The logit lens: what the model would predict if it stopped at each layer, as one compiled program.

:func:`logit_lens` records the residual stream at each site of one forward
pass and reads each through the model's own readout (its final norm and
unembedding), as if the layers after the site were skipped. One program
runs the pass and every site's readout, its softmax, top tokens and the
chosen token's probability and rank: only those small arrays leave the
device, never a ``[layers, tokens, vocabulary]`` array.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcapture_nb.interventions.lens_result import LogitLens
from jaxcapture_nb.interventions.sweep import Graph, model_order, recorded_run, sites_of
from jaxcapture_nb.upstream import flax_check

# Where common decoders keep their final norm and their unembedding, by
# attribute name: Llama, Qwen, Gemma and OLMo write ``norm`` and ``lm_head``
# (or tie the unembedding to ``embed_tokens``); GPT-2 writes ``ln_f`` and
# ``wte``; many NNX examples write ``final_norm`` and ``embed``.
_NORMS = ("norm", "final_norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f")
_HEADS = ("lm_head", "unembed", "output", "head")
_EMBEDS = ("embed_tokens", "embed", "embedder", "wte", "token_embedding", "tok_embeddings")
_WRAPPERS = ("model", "transformer", "decoder")


def find_readout(model: nnx.Module) -> FoundReadout:
    """The model's readout ``(model, hidden) -> logits``: its final norm, then its unembedding.

    Looks where common decoders keep them (``norm``/``ln_f``/``final_norm``,
    then ``lm_head``, or an embedding's ``attend`` where the two are tied),
    also one level down (``model.norm``, ``transformer.ln_f``).

    Raises:
      ValueError: neither is found; the message says how to give ``readout``.

    Example:
      >>> class Tiny(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.embed = nnx.Embed(5, 4, rngs=rngs)
      ...         self.norm = nnx.RMSNorm(4, rngs=rngs)
      >>> tiny = Tiny(nnx.Rngs(0))
      >>> find_readout(tiny)(tiny, jnp.ones((1, 2, 4))).shape
      (1, 2, 5)
    """
    for path in ((), *((w,) for w in _WRAPPERS)):
        owner = _attribute(model, path)
        if owner is None:
            continue
        norm = next((n for n in _NORMS if callable(getattr(owner, n, None))), None)
        head = next((n for n in _HEADS if isinstance(getattr(owner, n, None), nnx.Module)), None)
        embed = next((n for n in _EMBEDS if hasattr(getattr(owner, n, None), "attend")), None)
        if norm is not None and (head is not None or embed is not None):
            return FoundReadout(path, norm, head, embed)
    raise ValueError(
        f"found no final norm and unembedding on {type(model).__name__} (looked for "
        f"{', '.join(_NORMS)} and {', '.join(_HEADS)} or a tied embedding): give logit_lens a "
        "readout, e.g. readout=lambda model, h: model.lm_head(model.final_norm(h))"
    )


def _attribute(model: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        model = getattr(model, name, None)
    return model


@dataclasses.dataclass(frozen=True)
class FoundReadout:
    """A readout :func:`find_readout` found, by the attributes' names.

    Equal readouts of one model structure are equal, so a second lens reuses
    the first's compiled program.
    """

    path: tuple[str, ...]
    norm: str
    head: str | None
    embed: str | None

    def __call__(self, model: nnx.Module, hidden: jax.Array) -> jax.Array:
        owner = _attribute(model, self.path)
        normed = getattr(owner, self.norm)(hidden)
        if self.head is not None:
            return getattr(owner, self.head)(normed)
        return getattr(owner, str(self.embed)).attend(normed)


def _default_forward(model: nnx.Module, inputs: Any) -> Any:
    return model(inputs)


def logit_lens(
    model: nnx.Module,
    tokens: Any,
    sites: str | Sequence[str],
    readout: Callable[[nnx.Module, jax.Array], jax.Array] | None = None,
    target: int | Sequence[int] | jax.Array | None = None,
    top: int = 5,
    example: int = 0,
    forward: Callable[[nnx.Module, Any], Any] = _default_forward,
    labels: Sequence[Any] | None = None,
    vocab: Sequence[str] | Callable[[int], str] | None = None,
) -> LogitLens:
    """Reads the residual stream at each site through the model's readout, for every position of one example.

    Args:
      model: an NNX decoder; it is not changed.
      tokens: the input, ``[batch, tokens]``, as ``forward`` takes it.
      sites: the residual stream's sites, in any order (say each layer's
        output, ``layers.{i}.__call__``), each ``[batch, tokens, width]``.
      readout: ``readout(model, hidden) -> logits``, the model's final norm
        and unembedding; None finds them (see :func:`find_readout`).
      target: the token whose probability and rank are read: one id for
        every position, or one per position; None takes the token the
        model itself predicts at each position.
      top: how many of the most probable tokens to keep per site and position.
      example: which example of the batch to read. The model runs on that
        example alone (each input array sliced along its first axis), as a
        decoder's residual stream at one example does not depend on the
        others; a model that mixes examples (batch statistics) is read with
        ``tokens`` of that one example.
      forward: ``forward(model, tokens) -> logits``; the model's call by default.
      labels: a label per position (the input's tokens as text), for the
        table and the view.
      vocab: a token's text, by id: a sequence, or a function (a
        tokenizer's ``decode``); None shows ids.

    Returns:
      A :class:`LogitLens`: a row per site in model order, then the model's
      own output, with a column per position.
    """
    if not isinstance(model, nnx.Module):
        raise TypeError(f"logit_lens takes a flax.nnx.Module, got {type(model).__name__}")
    sites = sites_of(sites)
    readout = find_readout(model) if readout is None else readout
    flax_check.check()  # before the trace below, whose recording relies on it
    graphdef, state = nnx.split(model)
    wanted = jnp.asarray(-1 if target is None else target, jnp.int32)
    one = jax.tree.map(lambda a: jnp.asarray(a)[example : example + 1], tokens)
    read = _lens_program(
        state, one, wanted, graphdef=Graph(graphdef), sites=sites, forward=forward, readout=readout, top=top
    )
    probability, rank, top_tokens, top_probabilities, chosen, reached = (np.asarray(a) for a in read)
    order = [*model_order(sites, reached), len(sites)]
    return LogitLens(
        [*(sites[i] for i in order[:-1]), "output"],
        chosen,
        probability[order],
        rank[order],
        top_tokens[order],
        top_probabilities[order],
        labels,
        vocab,
    )


@functools.partial(jax.jit, static_argnames=("graphdef", "sites", "forward", "readout", "top"))
def _lens_program(state, tokens, wanted, *, graphdef, sites, forward, readout, top):
    """Per site and the output: the target's probability and rank, and the top tokens, ``[rows, positions, ...]``.

    ``tokens`` hold one example.
    """
    logits, values, reached = recorded_run(state, tokens, graphdef=graphdef, sites=sites, forward=forward)
    final = logits[0]
    predicted = jnp.argmax(final, axis=-1)
    chosen = jnp.broadcast_to(wanted, predicted.shape)
    chosen = jnp.where(chosen < 0, predicted, chosen)  # -1: the model's own prediction
    model = graphdef.merge(state)
    rows = [readout(model, values[s])[0] for s in sites] + [final]
    stacked = jnp.stack(rows).astype(jnp.float32)  # [rows, positions, vocabulary]
    # Probabilities only where they are read, from each row's log-sum-exp:
    # a softmax of every logit would cost a pass over them of its own.
    normalizer = jax.nn.logsumexp(stacked, axis=-1, keepdims=True)
    at_target = jnp.take_along_axis(stacked, chosen[None, :, None], axis=-1)
    # Rank 1 is the most probable; ties count in the target's favour.
    rank = 1 + jnp.sum(stacked > at_target, axis=-1, dtype=jnp.int32)
    probability = jnp.exp(at_target - normalizer)[..., 0]
    top_logits, top_tokens = jax.lax.top_k(stacked, top)
    return probability, rank, top_tokens, jnp.exp(top_logits - normalizer), chosen, reached
