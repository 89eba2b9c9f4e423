"""Interleaved timing: every variant runs once per round, medians reported."""

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np


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


def samples_inside(
    variants: dict[str, Callable[[], object]], blocks: dict[str, Any], rounds: int = 15
) -> dict[str, list[float]]:
    """:func:`samples` of ``variants`` inside the entered context managers ``blocks``, which exit however it ends."""
    try:
        return samples(variants, rounds=rounds)
    finally:
        for block in blocks.values():
            block.__exit__(None, None, None)


def compare(variants: dict[str, Callable[[], object]], rounds: int = 15, warmup: int = 2) -> dict[str, float]:
    """Median seconds per call of each variant, measured round-robin."""
    return {name: statistics.median(t) for name, t in samples(variants, rounds, warmup).items()}


def paired_ratios(times: dict[str, list[float]], base: str) -> dict[str, float]:
    """Median over rounds of each variant's time divided by the base's time in the same round.

    A slow spell of the machine hits both calls of a round, so pairing them
    cancels drift that a ratio of overall medians would keep.
    """
    return {name: float(np.median(_round_ratios(times, name, base))) for name in times}


def paired_ratio_interval(
    times: dict[str, list[float]], name: str, base: str, confidence: float = 0.95, resamples: int = 2000
) -> tuple[float, float]:
    """A bootstrap interval for :func:`paired_ratios` of ``name`` to ``base``.

    Rounds are resampled with replacement and the median ratio taken each
    time; the interval holds the central ``confidence`` of those medians. On
    a noisy machine it says which digits of a ratio mean anything.
    """
    ratios = _round_ratios(times, name, base)
    draws = np.random.default_rng(0).integers(0, len(ratios), (resamples, len(ratios)))
    medians = np.median(ratios[draws], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(low), float(high)


def _round_ratios(times: dict[str, list[float]], name: str, base: str) -> np.ndarray:
    """Each round's time of ``name`` divided by the base's time in the same round."""
    return np.asarray(times[name]) / np.asarray(times[base])
