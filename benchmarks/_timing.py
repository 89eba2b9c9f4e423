"""Interleaved timing: every variant runs once per round, medians reported."""

import random
import statistics
import time
from collections.abc import Callable

import jax


def samples(
    variants: dict[str, Callable[[], object]],
    rounds: int = 15,
    warmup: int = 2,
    reset: Callable[[], object] = lambda: None,
) -> dict[str, list[float]]:
    """Seconds of every call of each variant, measured round-robin.

    Running the variants in turn within each round exposes them to the same
    machine noise, so their ratios are meaningful even when absolute times drift.
    Each round runs them in a new order (shuffled with a fixed seed), so no
    variant always runs first, or always right after one whose leftover
    background work it would pay for.
    ``reset`` runs, untimed, before every call, so each starts from the same state.
    """
    for fn in variants.values():
        for _ in range(warmup):
            reset()
            jax.block_until_ready(fn())
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name in order:
            fn = variants[name]
            reset()
            start = time.perf_counter()
            jax.block_until_ready(fn())
            times[name].append(time.perf_counter() - start)
    return times


def compare(variants: dict[str, Callable[[], object]], rounds: int = 15, warmup: int = 2) -> dict[str, float]:
    """Median seconds per call of each variant, measured round-robin."""
    return {name: statistics.median(t) for name, t in samples(variants, rounds, warmup).items()}


def paired_ratios(times: dict[str, list[float]], base: str) -> dict[str, float]:
    """Median over rounds of each variant's time divided by the base's time in the same round.

    A slow spell of the machine hits both calls of a round, so pairing them
    cancels drift that a ratio of overall medians would keep.
    """
    return {
        name: statistics.median(t / b for t, b in zip(series, times[base], strict=True))
        for name, series in times.items()
    }
