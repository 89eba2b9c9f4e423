"""Interleaved timing: every variant runs once per round, medians reported."""

import statistics
import time
from collections.abc import Callable

import jax


def compare(variants: dict[str, Callable[[], object]], rounds: int = 15, warmup: int = 2) -> dict[str, float]:
    """Median seconds per call of each variant, measured round-robin.

    Running the variants in turn within each round exposes them to the same
    machine noise, so their ratios are meaningful even when absolute times drift.
    """
    for fn in variants.values():
        for _ in range(warmup):
            jax.block_until_ready(fn())
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}
