"""Many values summarized as rows of one table agree with each summarized alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcapture_nb.stats.batch import CHUNK, summarize_batch
from jaxcapture_nb.stats.summarize import step_summaries
from jaxcapture_nb.stats.summary import summarize_array

rng = np.random.default_rng(0)
F = np.float32
MASK = -2.3819763e38

CASES = {
    "sizes around the row width": [
        rng.normal(size=n).astype(F) for n in (1, 3, CHUNK - 1, CHUNK, CHUNK + 1, 1000)
    ],
    "a NaN beside ordinary values": [np.array([1.0, np.nan, 2.0], F), rng.normal(size=50).astype(F)],
    "infinities only, NaN only, a constant": [
        np.array([np.inf, -np.inf], F),
        np.array([np.nan], F),
        np.full(7, 3.0, F),
    ],
    "subnormals, zeros, values near the float32 limit": [
        np.array([1e-40, 0.0, -2e-41], F),
        np.zeros(10, F),
        np.array([3e38, -3e38], F),
    ],
    "masked logits beside a large mean": [
        np.where(np.tril(np.ones((8, 8))) > 0, rng.normal(size=(8, 8)), MASK).astype(F),
        (rng.normal(size=400) + 1e4).astype(F),
    ],
    "many shapes": [
        rng.exponential(size=s).astype(F) for s in [(2, 3), (7,), (4, 5, 6), (31, 31), (1, 1)] * 6
    ],
}


# One program per shape, shared by every case (a new jit per value would compile each value again).
summarize_alone = jax.jit(lambda v: summarize_array(v, 64))


@pytest.mark.parametrize("name", CASES)
def test_each_value_of_a_batch_is_summarized_as_it_is_alone(name):
    values = [jnp.asarray(v) for v in CASES[name]]
    stats, counts = jax.jit(lambda vs: summarize_batch(vs, 64))(values)
    for k, v in enumerate(values):
        alone = summarize_alone(v)
        np.testing.assert_array_equal(counts[k], alone.counts, err_msg=f"value {k} of {name}")
        # Sums taken row by row round differently from one long sum.
        np.testing.assert_allclose(stats[k], alone.stats, rtol=3e-6, err_msg=f"value {k} of {name}")


def test_a_nan_in_one_value_leaves_the_others_precision_alone():
    shifted = (rng.normal(size=400) + 1e4).astype(F)
    with_nan = np.array([1.0, np.nan], F)
    stats, _ = jax.jit(lambda vs: summarize_batch(vs, 64))([jnp.asarray(with_nan), jnp.asarray(shifted)])
    np.testing.assert_allclose(float(stats[1, 3]), shifted.astype(np.float64).std(), rtol=1e-5)


def _program_lines(count: int) -> int:
    shapes = [(8, 16, 16, 4), (8, 10), (7, 3, 5), (2, 3, 9, 4), (100,), (31, 31), (8, 64), (3,)]

    def run(x):
        values = [
            jnp.tanh(x[: int(np.prod(s))].reshape(s) * (i + 1)) for i, s in enumerate((shapes * 8)[:count])
        ]
        return [s.counts for s in step_summaries(values, 64)]

    return jax.jit(run).lower(jnp.ones(8 * 16 * 16 * 4)).compile().as_text().count("\n")


def test_the_compiled_program_does_not_grow_with_the_number_of_shapes():
    # Eight values of eight shapes and forty of the same eight: the
    # summaries take one program either way; only the values' own
    # computations and the copy into the table grow.
    few, many = _program_lines(8), _program_lines(40)
    assert many < 1.6 * few, (few, many)


def test_large_values_of_one_shape_share_one_summary_program_and_match_each_alone():
    big = [rng.normal(size=(3, 50_000)).astype(F) for _ in range(3)]
    big[1][0, 0] = np.nan
    values = [jnp.asarray(v) for v in [*big, np.arange(5.0, dtype=F)]]
    lowered = jax.jit(lambda vs: step_summaries(vs, 16)).lower(values).as_text()
    # One function for the three large values, called three times.
    assert lowered.count("func.func private @summarize_array") == 1
    assert lowered.count("call @summarize_array") == 3
    summaries = jax.jit(lambda vs: step_summaries(vs, 16))(values)
    for v, s in zip(values, summaries, strict=True):
        alone = summarize_array(v, 16)
        np.testing.assert_array_equal(s.counts, alone.counts)
        np.testing.assert_allclose(s.stats, alone.stats, rtol=1e-6)
        assert s.shape == v.shape
