"""summarize() against float64 NumPy on random arrays that reach the ends of every input dtype.

Each dtype gets arrays of several sizes and distributions: ordinary values,
magnitudes spread log-uniformly from the smallest subnormal to the largest
finite value, mixtures of the dtype's extremes, sums that cancel, a large
offset with a small spread, constants of each extreme, NaN and Inf. The
values are summarized in float32, so the reference is computed in float64
from the same values converted to float32.
"""

import math

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxcapture_nb import summarize

FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
INTS = ["int8", "int32", "uint8", "uint32"]
SMALLEST_NORMAL_32 = 2.0**-126
SMALLEST_SUBNORMAL_32 = 2.0**-149
BINS = 64


def extremes(dtype: np.dtype) -> list[float]:
    """The dtype's largest, smallest normal and smallest subnormal values, both signs, and 0 and 1."""
    if dtype == np.bool_:
        return [0.0, 1.0]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return [float(info.min), float(info.max), 0.0, 1.0] + ([-1.0] if info.min < 0 else [])
    info = ml_dtypes.finfo(dtype)
    big, tiny, sub = float(info.max), float(info.smallest_normal), float(info.smallest_subnormal)
    return [big, -big, tiny, -tiny, sub, -sub, 0.0, 1.0, -1.0]


def arrays(dtype: np.dtype, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Arrays of ``n`` values of ``dtype``, one per distribution."""
    ends = extremes(dtype)
    if dtype == np.bool_:
        return [rng.random(n) < p for p in (0.0, 0.3, 1.0)]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        out = [
            rng.integers(info.min, info.max, n, endpoint=True),
            rng.choice(ends, n),
            rng.integers(-3, 4, n).clip(info.min),
        ]
        out += [np.full(n, v) for v in ends]
        return [a.astype(dtype) for a in out]
    info = ml_dtypes.finfo(dtype)
    big, sub = float(info.max), float(info.smallest_subnormal)
    signs = rng.choice([-1.0, 1.0], n)
    offset = big / 4 * rng.choice([-1.0, 1.0])
    out = [
        rng.normal(size=n) * 2.0 ** rng.uniform(np.log2(float(info.smallest_normal)), np.log2(big) - 4),
        signs * 2.0 ** rng.uniform(np.log2(sub), np.log2(big), n),
        rng.choice(ends, n),
        np.where(rng.random(n) < 0.5, big, -big) * rng.uniform(0.99, 1.0, n),
        np.concatenate([[big, -big], rng.normal(size=n - 2)]) if n > 2 else np.full(n, big),
        offset + offset * 2.0 ** -rng.integers(4, 12) * rng.normal(size=n),
        # A mean 3.9 stds from zero: just below where the centred pass starts.
        (rng.normal(size=n) + 3.9) * 2.0 ** rng.integers(-8, 8),
        signs * sub * rng.integers(0, 8, n),
        # Around 2**-32 the fast pass hands over to the careful one.
        signs * 2.0 ** rng.uniform(-40, -28, n),
    ]
    out += [np.full(n, v) for v in ends]
    with_nonfinite = rng.normal(size=n)
    with_nonfinite[rng.random(n) < 0.05] = np.nan
    if dtype != ml_dtypes.float8_e4m3fn:  # it has no infinities
        with_nonfinite[rng.random(n) < 0.05] = np.inf
        with_nonfinite[rng.random(n) < 0.05] = -np.inf
        with_nonfinite[0] = big
    out.append(with_nonfinite)
    return [np.where(np.isfinite(a), np.clip(a, -big, big), a).astype(dtype) for a in out]


def check(x: np.ndarray, s) -> None:
    """Checks a summary against float64 NumPy over the float32 values of ``x``.

    - Counts of finite values, NaN, +Inf, -Inf and exact zeros are exact.
    - Min and max are exact, except that a subnormal one may read as 0 when
      the array also holds values of ordinary size: XLA on a CPU flushes
      subnormal floats to zero in arithmetic (the careful pass reads them
      from their bits, but the fast pass does not).
    - The mean is within ``1e-5 * |mean| + 1e-6 * mean(|x|) + 2**-149``: a
      relative 1e-5, and where the mean cancels to near zero, the error of a
      float32 sum of the values (a few float32 roundings of their total
      magnitude); the last term is the spacing of float32's subnormals, as
      the result is stored in float32.
    - The std is within ``1e-5 * std + 1e-6 * mean(|x|) + 2**-149``: a
      relative 1e-5, and, for a std that is tiny beside the values, the
      error of the mean it is measured from.
    - The histogram is exact: each value lies in its bin on the summary's
      edges, computed in float64, except a value within ``tol`` bins of an
      edge (float32 rounding of the bin arithmetic), which may lie in
      either neighbour. Counts add up to the finite count.
    """
    v = np.asarray(x).astype(np.float32).astype(np.float64).ravel()
    finite = v[np.isfinite(v)]
    s = s.to_numpy()
    counts = [int(c) for c in (s.count, s.nan_count, s.posinf_count, s.neginf_count, s.zero_count)]
    want = [finite.size, np.isnan(v).sum(), np.isposinf(v).sum(), np.isneginf(v).sum(), (v == 0).sum()]
    assert counts == want
    assert int(s.hist.sum()) == finite.size
    if not finite.size:
        assert np.isnan(s.mean) and np.isnan(s.std)
        return
    for got, ref in ((float(s.min), finite.min()), (float(s.max), finite.max())):
        assert got == ref or (abs(ref) < SMALLEST_NORMAL_32 and got == 0), (got, ref)
    magnitude = np.abs(finite).mean()
    ref_mean, ref_std = finite.mean(), finite.std()
    assert abs(float(s.mean) - ref_mean) <= 1e-5 * abs(ref_mean) + 1e-6 * magnitude + SMALLEST_SUBNORMAL_32
    assert abs(float(s.std) - ref_std) <= 1e-5 * ref_std + 1e-6 * magnitude + SMALLEST_SUBNORMAL_32
    lo, hi = float(s.lo), float(s.hi)
    assert np.isfinite(lo) and np.isfinite(hi) and lo <= finite.min() and finite.max() <= hi
    bins = s.hist.size
    position = (finite - lo) / (hi - lo) * bins
    tol = 4 * bins * 2.0**-24 + 2.0 ** ((bins - 1).bit_length() - 23)
    below = np.cumsum(s.hist)[:-1]  # values in the bins below each inner edge
    edges = np.arange(1, bins)
    assert np.all((position[:, None] < edges - tol).sum(axis=0) <= below)
    assert np.all(below <= (position[:, None] < edges + tol).sum(axis=0))


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_statistics_match_float64_numpy_at_the_ends_of_each_dtype(dtype):
    dtype = np.dtype(getattr(ml_dtypes, dtype, dtype))
    for seed in range(3):
        rng = np.random.default_rng(seed)
        # Arrays of 1000, 20_001 (odd, so the histogram's pairs are padded) and
        # 1 values, summarized together as rows of one table.
        xs = []
        while len(xs) < 16:
            xs += arrays(dtype, 1000, rng)
        xs += arrays(dtype, 20_001, rng)[:2] + arrays(dtype, 1, rng)[:1]
        for x, s in zip(xs, summarize([jnp.asarray(x) for x in xs], bins=BINS), strict=True):
            check(x, s)


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in a batch"])
def test_the_mean_of_huge_float32_values_that_cancel_keeps_the_small_ones(batched):
    """``[1e30, 1, 1, -1e30]`` summed in order or in pairs loses the ones: the mean is 0.5, not 0."""
    rng = np.random.default_rng(0)
    mixed = np.concatenate([np.full(40, 1e30), np.full(40, -1e30), rng.uniform(0, 1, 80)]).astype(np.float32)
    for x in (np.array([1e30, 1.0, 1.0, -1e30], np.float32), rng.permutation(mixed)):
        want = math.fsum(x.astype(np.float64)) / x.size
        s = summarize({"x": jnp.asarray(x), "y": jnp.ones(3)})["x"] if batched else summarize(jnp.asarray(x))
        # Rounded in float32: the small values' sum to float32's precision.
        assert float(s.mean) == pytest.approx(want, rel=1e-5)
