"""Activation patching: a sweep as one compiled program against a Python loop of patched passes.

The model is the 4-layer Qwen3-style decoder of ``tests/public_style.py``
(width 64, 4 heads) on 8 sequences of 32 tokens. Its residual sites are
each layer's output (``layers.{i}.__call__``): 4 sites x 32 positions =
128 patches, each putting the clean run's value at one site and position
into the corrupted run and reading a logit difference.

- ``sweep``: :func:`patching_sweep`, warm (its program compiled by a first
  run; the sweep compiles once, whatever the number of patches).
- ``loop``: what a user writes without it, warm: for every site and
  position, ``with patch(model, {at(site, np.s_[:, p]): clean[site]})``
  around a jitted forward pass and the metric.

Target: the sweep at least 10x faster than the loop, results equal to
1e-6.

Heads: the same decoder with 8 query heads, swept at each layer's queries
(``layers.{i}.attention.q_norm.__call__``, ``[batch, tokens, heads,
head_dim]``) one head and position at a time, ``heads=8``: 4 layers x 8
heads x 16 positions = 512 patches in one program, against the loop a user
writes with the best of ``patch``: per site one compiled pass whose
replacement takes the head and position as arrays (a
:class:`~jaxcapture_nb.Replacement`), so the loop compiles 4 programs, not
512. Same targets. Also printed: ``patch(model, {})`` around a jitted forward pass
against the pass alone (target: nothing measurable), and
:func:`attribution_patching` beside the sweep.
"""

import argparse
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _timing import paired_ratio_interval, paired_ratios, samples
from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from public_style import GqaDecoder  # noqa: E402

from jaxcapture_nb import (  # noqa: E402
    Replacement,
    at,
    attribution_patching,
    capture,
    patch,
    patching_sweep,
)

LAYERS, TOKENS, BATCH = 4, 32, 8
HEADS, HEAD_POSITIONS = 8, 16


def logit_difference(logits):
    return jnp.mean(logits[:, -1, 3] - logits[:, -1, 5])


def main(rounds: int) -> None:
    model = GqaDecoder(layers=LAYERS, rngs=nnx.Rngs(0))
    clean = jax.random.randint(jax.random.key(1), (BATCH, TOKENS), 0, 256)
    corrupted = clean.at[:, : TOKENS // 2].set(
        jax.random.randint(jax.random.key(2), (BATCH, TOKENS // 2), 0, 256)
    )
    sites = [f"layers.{i}.__call__" for i in range(LAYERS)]
    positions = list(range(TOKENS))
    step = nnx.jit(lambda m, t: logit_difference(m(t)))
    with capture(model, keep="last", methods=True) as cap:
        model(clean)
    clean_values = {s: cap[s] for s in sites}

    def sweep():
        return patching_sweep(model, clean, corrupted, logit_difference, sites, positions).effect

    def loop():
        out = np.empty((len(sites), len(positions)))
        for i, site in enumerate(sites):
            for p in positions:
                with patch(model, {at(site, np.s_[:, p]): clean_values[site]}):
                    out[i, p] = float(step(model, corrupted))
        return out

    start = time.perf_counter()
    exact = sweep()
    first_sweep = time.perf_counter() - start
    start = time.perf_counter()
    by_loop = loop()
    first_loop = time.perf_counter() - start
    print(
        f"{len(sites)} sites x {len(positions)} positions = {len(sites) * len(positions)} patches; "
        f"first run (compiles): sweep {first_sweep:.2f} s, loop {first_loop:.2f} s"
    )
    print(f"  largest difference, sweep against loop: {np.abs(exact - by_loop).max():.2e}  target <= 1e-6")
    times = samples(
        {
            "loop": loop,
            "sweep": sweep,
            "attribution": lambda: (
                attribution_patching(model, clean, corrupted, logit_difference, sites, positions).effect
            ),
        },
        rounds=rounds,
        warmup=1,
    )
    ratios = paired_ratios(times, "sweep")
    low, high = paired_ratio_interval(times, "loop", "sweep")
    print(
        f"  warm: loop {np.median(times['loop']) * 1e3:.0f} ms, sweep {np.median(times['sweep']) * 1e3:.0f} ms, "
        f"attribution {np.median(times['attribution']) * 1e3:.0f} ms; "
        f"loop / sweep {ratios['loop']:.1f}x [{low:.1f}, {high:.1f}]  target >= 10x"
    )

    heads(rounds, clean, corrupted)

    forward = nnx.jit(lambda m, t: m(t))
    empty = patch(model, {})

    def plain():
        return jax.block_until_ready(forward(model, corrupted))

    def patched():
        with empty:
            return jax.block_until_ready(forward(model, corrupted))

    times = samples({"plain": plain, "patch(model, {})": patched}, rounds=max(rounds * 10, 50), warmup=5)
    ratio = paired_ratios(times, "plain")["patch(model, {})"]
    low, high = paired_ratio_interval(times, "patch(model, {})", "plain")
    print(
        f"  jitted forward {np.median(times['plain']) * 1e3:.2f} ms; inside patch(model, {{}}) "
        f"{ratio:.3f}x [{low:.3f}, {high:.3f}]  target: nothing measurable"
    )


def _one_head_at(value, clean_value, head, position):
    """``value`` with the clean run's entries at one head and position (axes 2 and 1)."""
    tokens = jnp.arange(value.shape[1])[None, :, None, None]
    heads = jnp.arange(value.shape[2])[None, None, :, None]
    return jnp.where((tokens == position) & (heads == head), clean_value, value)


def heads(rounds: int, clean, corrupted) -> None:
    """A sweep over every head and position of 4 layers, against the loop of patched passes."""
    model = GqaDecoder(layers=LAYERS, heads=HEADS, kv_heads=2, head_dim=8, rngs=nnx.Rngs(0))
    clean, corrupted = clean[:, :HEAD_POSITIONS], corrupted[:, :HEAD_POSITIONS]
    sites = [f"layers.{i}.attention.q_norm.__call__" for i in range(LAYERS)]
    positions = list(range(HEAD_POSITIONS))
    step = nnx.jit(lambda m, t: logit_difference(m(t)))
    with capture(model, keep="last", methods=True) as cap:
        model(clean)
    clean_values = {s: cap[s] for s in sites}

    def sweep():
        return patching_sweep(model, clean, corrupted, logit_difference, sites, positions, heads=HEADS).effect

    def loop():
        out = np.empty((len(sites) * HEADS, len(positions)))
        for i, site in enumerate(sites):
            for h in range(HEADS):
                for p in positions:
                    replacement = Replacement(_one_head_at, (clean_values[site], h, p))
                    with patch(model, {site: replacement}):
                        out[i * HEADS + h, p] = float(step(model, corrupted))
        return out

    start = time.perf_counter()
    exact = sweep()
    first_sweep = time.perf_counter() - start
    start = time.perf_counter()
    by_loop = loop()
    first_loop = time.perf_counter() - start
    print(
        f"heads: {len(sites)} sites x {HEADS} heads x {len(positions)} positions = {exact.size} patches; "
        f"first run (compiles): sweep {first_sweep:.2f} s, loop {first_loop:.2f} s"
    )
    print(f"  largest difference, sweep against loop: {np.abs(exact - by_loop).max():.2e}  target <= 1e-6")
    times = samples({"loop": loop, "sweep": sweep}, rounds=rounds, warmup=1)
    ratio = paired_ratios(times, "sweep")["loop"]
    low, high = paired_ratio_interval(times, "loop", "sweep")
    print(
        f"  warm: loop {np.median(times['loop']) * 1e3:.0f} ms, sweep {np.median(times['sweep']) * 1e3:.0f} ms; "
        f"loop / sweep {ratio:.1f}x [{low:.1f}, {high:.1f}]  target >= 10x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    main(parser.parse_args().rounds)
