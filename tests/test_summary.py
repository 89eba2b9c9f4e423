"""summarize(): statistics and exact histograms on the device."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcapture_nb import Summary, capture, summarize
from jaxcapture_nb.stats import summarize as summarize_module
from jaxcapture_nb.stats.batch import packed_rows
from jaxcapture_nb.stats.records import format_table
from jaxcapture_nb.stats.summary import MAX_BINS, bin_counts


def reference(x: np.ndarray, summary: Summary) -> None:
    """Checks a summary against NumPy, computed in float64."""
    v = np.abs(x) if np.iscomplexobj(x) else np.asarray(x, np.float64)
    v = np.asarray(v, np.float64).ravel()
    finite = v[np.isfinite(v)]
    s = summary.to_numpy()
    assert s.count == finite.size
    assert s.nan_count == np.isnan(v).sum()
    assert s.posinf_count == np.isposinf(v).sum()
    assert s.neginf_count == np.isneginf(v).sum()
    assert s.zero_count == (v == 0).sum()
    assert s.hist.dtype == np.int32 and s.hist.sum() == finite.size
    if finite.size:
        np.testing.assert_allclose(s.min, finite.min(), rtol=1e-6)
        np.testing.assert_allclose(s.max, finite.max(), rtol=1e-6)
        np.testing.assert_allclose(s.mean, finite.mean(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(s.std, finite.std(), rtol=1e-3, atol=1e-5)
        expected, _ = np.histogram(finite, bins=s.hist.size, range=(float(s.lo), float(s.hi)))
        # Values within float32 rounding of an edge may land in the neighbour.
        assert np.abs(expected - s.hist).sum() <= 2
    else:
        assert np.isnan(s.mean) and np.isnan(s.min)


DTYPES = ["float32", "float16", "bfloat16", "float8_e4m3fn", "int8", "int32", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_matrix_matches_numpy(dtype):
    x = jax.random.normal(jax.random.key(0), (64, 33)) * 4
    if dtype == "complex64":
        x = x + 1j * jax.random.normal(jax.random.key(1), (64, 33))
    x = x.astype(dtype)
    s = summarize(x, bins=16)
    assert s.shape == (64, 33) and s.dtype == dtype and s.reason is None
    reference(np.asarray(x.astype(jnp.complex64 if dtype == "complex64" else jnp.float32)), s)
    assert s.note == ("magnitude of complex values" if dtype == "complex64" else "")


def test_low_precision_counts_do_not_saturate():
    x = jnp.ones((3000, 1000), jnp.bfloat16)  # 3M ones: bfloat16 itself counts to 256 exactly
    s = summarize(x)
    assert int(s.count) == 3_000_000 and int(s.hist.sum()) == 3_000_000


@pytest.mark.parametrize(
    "x",
    [
        jnp.float32(2.5),
        jnp.zeros((0, 4)),
        jnp.zeros(5),
        jnp.array([1.0, jnp.nan, jnp.inf, -jnp.inf, 0.0, 3.0]),
    ],
    ids=["scalar", "empty", "constant", "nonfinite"],
)
def test_edge_cases_match_numpy(x):
    reference(np.asarray(x), summarize(x, bins=8))


def test_all_nonfinite_has_no_finite_statistics():
    s = summarize(jnp.array([jnp.nan, jnp.inf]))
    assert int(s.count) == 0 and int(s.nan_count) == 1 and int(s.posinf_count) == 1
    assert np.isnan(float(s.mean)) and int(s.hist.sum()) == 0


def test_prng_keys_get_a_reason_instead_of_statistics():
    s = summarize(jax.random.split(jax.random.key(0), 3))
    assert s.reason and "PRNG key" in s.reason and s.count is None and s.shape == (3,)


def test_a_pytree_of_small_values_is_summarized_by_one_program_whatever_their_shapes():
    tree = {"a": jnp.ones((4, 4)), "b": [jnp.arange(3), None, "text"], "c": jnp.zeros(2, jnp.bfloat16)}
    out = summarize(tree, bins=8)
    assert isinstance(out["a"], Summary) and out["b"][1] is None and out["b"][2] is None
    assert out["b"][0].dtype == "int32" and int(out["b"][0].count) == 3
    compiled = packed_rows.jitted._cache_size()
    other = summarize(
        {"x": jnp.ones((7, 9)), "y": [jnp.arange(5.0)] * 4, "z": jnp.zeros(3, jnp.float16)}, bins=8
    )
    assert packed_rows.jitted._cache_size() == compiled
    assert int(other["y"][3].count) == 5 and other["z"].dtype == "float16"


def test_large_values_are_summarized_by_a_program_compiled_once_per_shape_and_type():
    n = (1 << 18) + 5
    tree = [jnp.ones(n), jnp.arange(n, dtype=jnp.float32), jnp.ones(3), jnp.ones(n, jnp.int32)]
    before = len(summarize_module._row_programs)
    out = summarize(tree, bins=8)
    assert len(summarize_module._row_programs) == before + 2
    assert int(out[1].count) == n and float(out[1].max) == n - 1 and int(out[2].count) == 3
    assert out[3].dtype == "int32" and float(out[3].mean) == 1.0
    summarize([jnp.zeros(n), 2 * jnp.ones(n)], bins=8)
    assert len(summarize_module._row_programs) == before + 2


def test_works_inside_jit_vmap_scan_and_nnx_jit():
    x = jax.random.normal(jax.random.key(0), (5, 7, 9))
    eager = summarize(x[0], bins=8)
    jitted = jax.jit(lambda x: summarize(x, bins=8))(x[0])
    np.testing.assert_array_equal(jitted.hist, eager.hist)
    stacked = jax.vmap(lambda x: summarize(x, bins=8))(x)
    assert stacked.hist.shape == (5, 8) and stacked.stacked_shape == (5,)
    np.testing.assert_array_equal(stacked.hist[0], eager.hist)
    _, scanned = jax.lax.scan(lambda c, x: (c, summarize(x, bins=8)), 0, x)
    np.testing.assert_array_equal(scanned.hist, stacked.hist)
    model = nnx.Linear(9, 3, rngs=nnx.Rngs(0))
    s = nnx.jit(lambda m, x: summarize(m(x)))(model, x[0])
    assert s.shape == (7, 3) and int(s.count) == 21


def test_a_summary_leaves_a_compiled_step_as_two_arrays():
    x = jax.random.normal(jax.random.key(0), (6, 5))
    out = jax.jit(lambda x: summarize({"a": x, "b": jnp.abs(x)}, bins=8))(x)
    leaves = jax.tree.leaves(out)
    assert [leaf.shape for leaf in leaves] == [(6,), (5 + 8,)] * 2
    host = np.asarray(x)
    s = out["a"]
    assert float(s.min) == host.min() and float(s.max) == host.max()
    assert int(s.count) == 30 and int(s.hist.sum()) == 30 and s.hist.shape == (8,)
    np.testing.assert_allclose(float(s.std), host.std(), rtol=1e-5)


def test_histogram_counts_stay_exact_when_the_scatter_sums_wrap():
    # Each table cell sums its own code once per pair, so a cell seen a
    # million times holds a multiple of its code far past 2**31.
    rng = np.random.default_rng(0)
    index = np.where(rng.random(3_000_001) < 0.9, 66, rng.integers(0, 68, 3_000_001)).astype(np.int32)
    counts = jax.jit(bin_counts, static_argnums=1)(jnp.asarray(index), 68)
    np.testing.assert_array_equal(np.asarray(counts), np.bincount(index, minlength=68))


def test_edges_span_lo_to_hi():
    s = summarize(jnp.array([-1.0, 3.0]), bins=4)
    np.testing.assert_allclose(s.edges, [-1.0, 0.0, 1.0, 2.0, 3.0])
    assert s.bins == 4


@pytest.mark.parametrize("bins", [0, MAX_BINS + 1, 2.5, True])
def test_bad_bins_is_a_clear_error(bins):
    with pytest.raises(ValueError, match=f"bins must be an integer from 1 to {MAX_BINS}"):
        summarize(jnp.ones(3), bins=bins)


@pytest.mark.parametrize("bins", [1, 3, 64, 250, 256, 1000, MAX_BINS])
def test_every_value_lands_in_its_bin_for_any_number_of_bins(bins):
    # Past 251 bins the values are no longer counted in pairs; with 2**16
    # bins the bin is read from the lowest mantissa bits the index uses.
    # The range is [0, bins], so bin k holds the values k + 0.5, the seven
    # zeros go to bin 0 and ``bins`` itself to the last bin.
    k = np.random.default_rng(0).integers(0, bins, 40_001)
    x = np.concatenate([np.zeros(7), k + 0.5, [float(bins)]]).astype(np.float32)
    s = summarize(jnp.asarray(x), bins=bins)
    expected = np.bincount(k, minlength=bins)
    expected[0] += 7
    expected[-1] += 1
    assert (float(s.lo), float(s.hi), int(s.zero_count)) == (0.0, float(bins), 7)
    np.testing.assert_array_equal(s.hist, expected)


def test_std_stays_accurate_when_the_mean_dwarfs_the_spread():
    noise = jax.random.normal(jax.random.key(0), (512, 512)) * 0.01
    for offset in (1e3, -5e4):
        x = offset + noise
        s = summarize(x)
        np.testing.assert_allclose(float(s.std), float(np.std(np.asarray(x, np.float64))), rtol=1e-2)
        np.testing.assert_allclose(float(s.mean), offset, rtol=1e-6)


def test_many_small_arrays_share_one_compiled_summary():
    xs = [jnp.full((8, 8), float(i)) for i in range(300)] + [jnp.arange(5.0)]
    out = summarize(xs, bins=4)
    assert [float(s.mean) for s in out[:300]] == [float(i) for i in range(300)]
    assert out[0].shape == (8, 8) and out[0].hist.shape == (4,) and int(out[299].count) == 64
    np.testing.assert_allclose(float(out[-1].std), np.std(np.arange(5.0)), rtol=1e-6)


# Finite values whose sum, squares or range overflow float32.
NEAR_THE_LIMIT = {
    "sum": [-2.3819763e38, -2.3819763e38, 1.0, 2.0],
    "constant": [2e38] * 4,
    "range": [3e38, -3e38],
    "largest constant": [3.4028235e38] * 3,
}


@pytest.mark.parametrize("values", NEAR_THE_LIMIT.values(), ids=NEAR_THE_LIMIT.keys())
def test_finite_values_near_the_float32_limit_have_finite_statistics(values):
    x = np.array(values, np.float32)
    s = summarize(jnp.asarray(x), bins=4)
    v = x.astype(np.float64)
    assert (int(s.count), int(s.nan_count), int(s.posinf_count), int(s.neginf_count)) == (v.size, 0, 0, 0)
    assert (float(s.min), float(s.max)) == (v.min(), v.max())
    np.testing.assert_allclose([float(s.mean), float(s.std)], [v.mean(), v.std()], rtol=1e-6)
    assert np.isfinite(float(s.lo)) and np.isfinite(float(s.hi))
    np.testing.assert_array_equal(s.hist, np.histogram(v, bins=4, range=(float(s.lo), float(s.hi)))[0])


def test_subnormal_values_are_neither_zeros_nor_lost():
    # A CPU flushes subnormal floats to zero in arithmetic; they are read
    # from their bits instead. In units of the smallest, 2**-149: mean 2,
    # std 4.18, which float32 rounds to 4.
    unit = np.float32(2.0**-149)
    s = summarize(jnp.asarray(np.array([0, 1, -2, 9], np.float32) * unit), bins=4)
    assert (int(s.count), int(s.zero_count), float(s.min), float(s.max)) == (4, 1, -2 * unit, 9 * unit)
    assert (float(s.mean), float(s.std)) == (2 * unit, 4 * unit)
    assert s.hist.tolist() == [2, 1, 0, 1]


def test_the_table_shows_finite_statistics_for_values_near_the_float32_limit():
    class Model(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "big", x)
            return x

    model = Model()
    with capture(model) as cap:
        model(jnp.array(NEAR_THE_LIMIT["sum"], jnp.float32))
    row = format_table(cap.records).splitlines()[1]
    assert "-1.191e+38" in row and "1.191e+38" in row
    assert "inf" not in row and "nan" not in row


@pytest.mark.parametrize("value", ["text", b"bytes", None, object()])
def test_a_value_that_is_no_array_number_or_pytree_is_refused_by_name(value):
    with pytest.raises(TypeError, match=rf"takes an array.*got {type(value).__name__}$"):
        summarize(value)
