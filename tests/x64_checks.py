"""Checks that run with ``jax_enable_x64`` on, in a process of their own, for test_x64.py.

x64 is a process-wide setting that must be made before any JAX computation,
so test_x64.py runs ``python x64_checks.py OUT.json`` once: every ``check_*``
function here runs in that process, and the report maps each name to "ok" or
the traceback of its failure. :func:`float32_cases` and :func:`summary_bits`
are also imported by the test process (x64 off), which compares them.
"""

import json
import math
import sys
import traceback
import warnings
from fractions import Fraction

import numpy as np

BINS = 16


def float32_cases() -> dict[str, np.ndarray]:
    """Arrays of 32-bit and narrower types whose summaries must not change with x64."""
    rng = np.random.default_rng(7)
    special = rng.normal(size=300).astype(np.float32)
    special[:5] = [np.nan, np.inf, -np.inf, 0.0, 1e-45]
    return {
        "normal": rng.normal(3.0, 2.0, size=(64, 33)).astype(np.float32),
        "special": special,
        "huge": (rng.uniform(-1, 1, size=500) * 3.4e38).astype(np.float32),
        "tiny": (rng.uniform(-1, 1, size=500) * 1e-40).astype(np.float32),
        "int32": rng.integers(-(2**31), 2**31 - 1, size=400, dtype=np.int32),
        "bool": rng.uniform(size=50) > 0.3,
        "float16": rng.normal(size=70).astype(np.float16),
        "empty": np.zeros((0, 3), np.float32),
    }


def summary_bits(summary) -> tuple[str, list[int], str]:
    """A summary's statistics as exact bits, its counts, and its stats type."""
    stats = np.asarray(summary.stats)
    return stats.tobytes().hex(), np.asarray(summary.counts).tolist(), str(stats.dtype)


# -- references in exact arithmetic -----------------------------------------------------


def exact_integer_summary(values, bins: int) -> dict:
    """Statistics and histogram of integers, with Python ints and fractions."""
    xs = [int(v) for v in np.asarray(values).ravel()]
    lo, hi, n = min(xs), max(xs), len(xs)
    hist = [0] * bins
    for x in xs:
        hist[min((x - lo) * bins // (hi - lo), bins - 1) if hi > lo else bins // 2] += 1
    total = sum(xs)
    variance = Fraction(n * sum(x * x for x in xs) - total * total, n * n)
    return {
        "min": float(lo),
        "max": float(hi),
        "mean": float(Fraction(total, n)),
        "std": math.sqrt(variance),
        "zeros": xs.count(0),
        "hist": hist,
        "spread": float(hi - lo),
    }


def assert_close(got, want, rtol=1e-12, scale=None, what=""):
    """``got`` within ``rtol`` of ``want``, relative to ``scale`` (default: ``|want|``)."""
    got, want = float(got), float(want)
    if math.isnan(want):
        assert math.isnan(got), f"{what}: {got!r}, want NaN"
        return
    allowed = rtol * (abs(want) if scale is None else scale)
    assert abs(got - want) <= allowed, f"{what}: {got!r}, want {want!r} (within {allowed:.3g})"


def check_float_summary(s, x: np.ndarray, label: str) -> None:
    """A float64 summary against NumPy in float64: statistics and the exact histogram on its edges."""
    assert np.asarray(s.stats).dtype == np.float64, f"{label}: stats are {np.asarray(s.stats).dtype}"
    finite = x[np.isfinite(x)]
    counts = (len(finite), int(np.isnan(x).sum()), int((x == np.inf).sum()), int((x == -np.inf).sum()))
    assert (int(s.count), int(s.nan_count), int(s.posinf_count), int(s.neginf_count)) == counts, label
    assert int(s.zero_count) == int((x == 0).sum()), f"{label}: zero_count"
    if not len(finite):
        assert np.isnan(s.mean), label
        return
    assert float(s.min) == finite.min() and float(s.max) == finite.max(), f"{label}: min/max"
    # NumPy's own float64 mean and std are rounded too; against the values'
    # magnitude, 1e-12 leaves room for both.
    # NumPy in units of a power of two near the largest magnitude (exact), so
    # its sums neither overflow nor lose subnormal values.
    unit = 2.0 ** np.floor(np.log2(max(np.abs(finite).max(), 5e-324)))
    mean = np.mean(finite / unit, dtype=np.float64) * unit
    std = np.std(finite / unit, dtype=np.float64) * unit
    # NumPy's own mean and std are rounded too: 1e-12 of the mean or of a
    # thousandth of the largest magnitude leaves room for both.
    magnitude = np.abs(finite).max()
    assert_close(s.mean, mean, scale=max(abs(mean), magnitude * 1e-3), what=f"{label}: mean")
    assert_close(s.std, std, scale=max(std, magnitude * 1e-3), what=f"{label}: std")
    edges = s.edges
    # Counted directly in float64: value v lies in bin k when edges[k] <= v < edges[k + 1].
    index = np.clip(np.searchsorted(edges, finite, side="right") - 1, 0, len(edges) - 2)
    want = np.bincount(index, minlength=len(edges) - 1)
    assert s.hist.tolist() == want.tolist(), f"{label}: hist {s.hist.tolist()} != {want.tolist()}"
    if np.isfinite(float(s.hi) / 2 - float(s.lo) / 2) and np.isfinite(float(s.hi) - float(s.lo)):
        # NumPy cannot bin a range wider than the largest float64.
        numpy = np.histogram(finite, s.bins, range=(float(s.lo), float(s.hi)))[0]
        assert s.hist.tolist() == numpy.tolist(), f"{label}: hist vs np.histogram {numpy.tolist()}"


def check_integer_summary(s, x: np.ndarray, label: str) -> None:
    """An int64/uint64 summary against exact integer arithmetic."""
    want = exact_integer_summary(x, s.bins)
    assert np.asarray(s.stats).dtype == np.float64, label
    assert int(s.count) == x.size and int(s.nan_count) == 0, label
    assert s.hist.tolist() == want["hist"], f"{label}: hist {s.hist.tolist()} != {want['hist']}"
    assert int(s.zero_count) == want["zeros"], f"{label}: zeros"
    assert float(s.min) == want["min"] and float(s.max) == want["max"], f"{label}: min/max"
    scale = max(abs(want["mean"]), want["spread"])
    assert_close(s.mean, want["mean"], scale=scale, what=f"{label}: mean")
    assert_close(s.std, want["std"], scale=max(want["std"], want["spread"] * 1e-3), what=f"{label}: std")


# -- checks -----------------------------------------------------------------------------


def float64_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    with_special = rng.normal(size=500)
    with_special[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324]
    return {
        "normal": rng.normal(3.0, 2.0, size=(40, 25)),
        "offset": rng.normal(1e6, 1e-3, size=1000),  # ill-conditioned one-pass variance
        "exponential": rng.exponential(5.0, size=777),
        "special": with_special,
        "huge": rng.uniform(-1, 1, size=600) * 1.7e308,  # sums and squares overflow
        "tiny": rng.uniform(-1, 1, size=600) * 1e-300,  # squares underflow
        "subnormal": rng.integers(-1000, 1000, size=300) * 5e-324,
        "integers on edges": np.arange(0.0, 101.0),
        "constant": np.full(9, 2.5),
        "beyond float32": rng.normal(size=100) * 1e200,
        "all nan": np.full(4, np.nan),
    }


def check_x64_is_on():
    import jax
    import jax.numpy as jnp

    assert jax.config.jax_enable_x64 and jnp.zeros(1).dtype == jnp.float64


def check_float64_statistics_and_histograms_match_numpy():
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    cases = float64_cases()
    summaries = summarize({k: jnp.asarray(v) for k, v in cases.items()}, bins=BINS)
    for label, x in cases.items():
        s = summaries[label]
        assert s.dtype == "float64", label
        if label == "subnormal":
            # Edges between subnormal values are not float64 numbers: count
            # the multiples of the smallest subnormal exactly instead.
            units = np.round(x / 5e-324).astype(np.int64)
            assert s.hist.tolist() == exact_integer_summary(units, BINS)["hist"], s.hist.tolist()
            assert float(s.min) == x.min() and float(s.max) == x.max(), label
            continue
        check_float_summary(s, x, label)
    # 64 bins: the integers 25, 50 and 75 lie exactly on edges.
    edges64 = summarize(jnp.arange(0.0, 101.0), bins=64)
    check_float_summary(edges64, np.arange(0.0, 101.0), "integers on 64 edges")


def check_the_mean_of_huge_values_that_cancel_keeps_the_small_ones():
    """``[1e300, 1, 1, -1e300]``: summed in order or in pairs the ones are lost; the mean is 0.5."""
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    rng = np.random.default_rng(5)
    mixed = np.concatenate([np.full(50, 1e300), np.full(50, -1e300), rng.uniform(0, 1, 100)])
    cases = {"in order": np.array([1e300, 1.0, 1.0, -1e300]), "mixed": rng.permutation(mixed)}
    for label, x in cases.items():
        want = math.fsum(x) / x.size
        alone = summarize(jnp.asarray(x), bins=BINS)
        batched = summarize({"x": jnp.asarray(x), "other": jnp.ones(3)}, bins=BINS)["x"]
        for how, s in (("alone", alone), ("in a batch", batched)):
            assert_close(s.mean, want, rtol=1e-9, what=f"{label}, {how}: mean")


def integer_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    third = 3 * 2**60  # with 3 bins the edges are the integers 2**60 and 2**61
    return {
        "int64 small": rng.integers(-50, 50, size=333),
        "int64 beyond 2**53": rng.integers(-(2**62), 2**62, size=999) * 2 + 1,
        "int64 narrow and large": 2**62 + rng.integers(0, 100, size=500),
        "int64 whole range": np.array([-(2**63), 2**63 - 1, 0, -1, 1, 2**53 + 1], np.int64),
        "int64 on edges": np.array([0, 2**60 - 1, 2**60, 2**60 + 1, 2**61 - 1, 2**61, third], np.int64),
        "int64 constant": np.full(5, 2**60 + 1, np.int64),
        "uint64 beyond int64": (2**63 + rng.integers(0, 2**62, size=800).astype(np.uint64)).astype(np.uint64),
        "uint64 whole range": np.array([0, 2**64 - 1, 2**63, 2**53 + 1, 7], np.uint64),
        "uint64 on edges": np.array([0, 2**60 - 1, 2**60, 2**61, third], np.uint64),
    }


def check_int64_and_uint64_histograms_are_exact_beyond_2_53():
    import jax
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    cases = integer_cases()
    arrays = {k: jnp.asarray(v, np.uint64 if k.startswith("uint64") else np.int64) for k, v in cases.items()}
    for bins in (3, BINS):
        eager = summarize(arrays, bins=bins)
        jitted = jax.jit(lambda a, bins=bins: summarize(a, bins=bins))(arrays)
        for label in cases:
            assert eager[label].dtype == str(arrays[label].dtype), label
            check_integer_summary(eager[label], np.asarray(arrays[label]), f"{label}, {bins} bins")
            assert summary_bits(jitted[label]) == summary_bits(eager[label]), f"{label}: jit differs"
    # A value on an edge counts in the bin above it.
    on_edges = summarize(arrays["int64 on edges"], bins=3)
    assert on_edges.hist.tolist() == [2, 3, 2], on_edges.hist.tolist()


def check_narrow_types_are_summarized_in_float32():
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    for label, x in float32_cases().items():
        s = summarize(jnp.asarray(x), bins=BINS)
        assert np.asarray(s.stats).dtype == np.float32, label
        assert s.dtype == str(jnp.asarray(x).dtype), label


def check_mixed_types_in_one_jitted_program_match_eager():
    import jax
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    rng = np.random.default_rng(5)
    tree = {
        "f64": jnp.asarray(rng.normal(size=(20, 30))),
        "f32": jnp.asarray(rng.normal(size=(20, 30)), jnp.float32),
        "i64": jnp.asarray(rng.integers(0, 2**60, size=100)),
        "c128": jnp.asarray(rng.normal(size=10) + 1j * rng.normal(size=10)),
        # 20 arrays of one shape, summarized with the rest as rows of a table per float type.
        "many": [jnp.asarray(rng.normal(size=8)) for _ in range(20)],
        "many32": [jnp.asarray(rng.normal(size=8), jnp.float32) for _ in range(20)],
    }
    eager = summarize(tree, bins=BINS)
    jitted = jax.jit(lambda t: summarize(t, bins=BINS))(tree)
    flat_eager, flat_jit = jax.tree.leaves(eager), jax.tree.leaves(jitted)
    assert len(flat_eager) == len(flat_jit)
    for a, b in zip(flat_eager, flat_jit, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    check_float_summary(eager["f64"], np.asarray(tree["f64"]), "f64 in a tree")
    check_float_summary(eager["many"][3], np.asarray(tree["many"][3]), "grouped f64")
    # The magnitudes summarize reads are JAX's: its complex abs and NumPy's may
    # differ in the last bit, and which way depends on the JAX release.
    check_float_summary(eager["c128"], np.asarray(jnp.abs(tree["c128"])), "complex128 magnitude")
    assert eager["c128"].note == "magnitude of complex values"
    assert np.asarray(eager["many32"][0].stats).dtype == np.float32


def check_summarize_rejects_a_string():
    from jaxcapture_nb import summarize

    try:
        summarize("text")
    except TypeError as e:
        assert "str" in str(e) and "array" in str(e), str(e)
    else:
        raise AssertionError("summarize('text') did not raise")


def float64_mlp():
    import jax.numpy as jnp
    from flax import nnx

    class Mlp(nnx.Module):
        def __init__(self, rngs):
            kw = {"param_dtype": jnp.float64, "dtype": jnp.float64, "rngs": rngs}
            self.first = nnx.Linear(4, 16, **kw)
            self.second = nnx.Linear(16, 1, **kw)

        def __call__(self, x):
            h = nnx.relu(self.first(x))
            self.sow(nnx.Intermediate, "hidden", h)
            self.sow(nnx.Intermediate, "hidden32", h.astype(jnp.float32))
            return self.second(h)

    return Mlp(nnx.Rngs(0))


class Counter:
    """A module sowing int64 and uint64 values beyond 2**53, built on demand."""

    def __new__(cls):
        import jax.numpy as jnp
        from flax import nnx

        class Ints(nnx.Module):
            def __call__(self, x):
                big = jnp.asarray(2**62, jnp.int64) + jnp.arange(x.shape[0], dtype=jnp.int64) * (2**40 + 1)
                self.sow(nnx.Intermediate, "ids", big)
                self.sow(nnx.Intermediate, "hashes", big.astype(jnp.uint64) * jnp.uint64(3))
                self.sow(nnx.Intermediate, "argmax", jnp.argmax(x, axis=-1))
                return x.sum()

        return Ints()


def records_by_name(cap) -> dict:
    return {r.name: r for r in cap.records}


def check_capture_of_a_float64_linear_model():
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jaxcapture_nb import capture

    model = float64_mlp()
    x = jax.random.normal(jax.random.key(1), (32, 4), jnp.float64)
    with capture(model) as cap:
        y = model(x)
    assert y.dtype == jnp.float64
    recs = records_by_name(cap)
    hidden = recs["hidden"]
    assert hidden.dtype == "float64" and np.asarray(hidden.summary.stats).dtype == np.float64
    check_float_summary(hidden.summary, np.asarray(hidden.value), "captured hidden")
    assert np.asarray(recs["hidden32"].summary.stats).dtype == np.float32

    # Summaries made inside the compiled call, float64 and float32 sites together.
    step = nnx.jit(lambda m, x: m(x))
    with capture(model, keep="all") as values:
        step(model, x)
    with capture(model, keep="summary") as summaries:
        step(model, x)
    want = np.asarray(records_by_name(values)["hidden"].value)
    for cap, keep in ((values, "all"), (summaries, "summary")):
        got = records_by_name(cap)
        check_float_summary(got["hidden"].summary, want, f"jitted hidden, keep={keep}")
        assert np.asarray(got["hidden32"].summary.stats).dtype == np.float32, keep


def check_capture_of_int64_and_uint64_sows():
    import jax.numpy as jnp
    from flax import nnx

    from jaxcapture_nb import capture

    model = Counter()
    x = jnp.asarray(np.random.default_rng(2).normal(size=(50, 7)))
    with capture(model, bins=BINS) as eager:
        model(x)
    with capture(model, keep="summary", bins=BINS) as jitted:
        nnx.jit(lambda m, x: m(x))(model, x)
    ids = 2**62 + np.arange(50, dtype=np.int64) * (2**40 + 1)
    wants = {
        "ids": ids,
        "hashes": ids.astype(np.uint64) * np.uint64(3),
        "argmax": np.argmax(np.asarray(x), -1),
    }
    for cap, how in ((eager, "eager"), (jitted, "jitted")):
        recs = records_by_name(cap)
        for name, want in wants.items():
            assert recs[name].dtype == str(want.dtype), (how, name, recs[name].dtype)
            check_integer_summary(recs[name].summary, want, f"{how} {name}")
    table = eager.table()
    assert "hashes" in table and "uint64" in table


def check_watch_streams_a_jitted_float64_train_step():
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from jaxcapture_nb import watch
    from jaxcapture_nb.views.live_view import LiveView

    model = float64_mlp()
    optimizer = nnx.Optimizer(model, optax.sgd(1e-2), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (16, 4), jnp.float64)
    y = jnp.ones((16, 1), jnp.float64)
    traces = []

    @nnx.jit
    def train_step(model, optimizer, x, y):
        traces.append(1)

        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses = []
    for every in (1, 2):
        with watch(model, every=every, display=False, bins=BINS) as w:
            for step in range(6):
                loss = train_step(model, optimizer, x, y)
                w.log(step=step, loss=loss)
                losses.append(float(loss))
        series = {key[-1]: s for key, s in w.stream.series.items()}
        assert set(series) >= {"hidden", "hidden32"}, list(series)
        for name in ("hidden", "hidden32"):
            s = series[name]
            assert w.stream.steps_seen == 6 and s.size == 6 // every, (
                name,
                every,
                w.stream.steps_seen,
                s.size,
            )
            assert (s.hists[: s.size].sum(axis=1) == 16 * 16).all(), name
            stats = s.stats[: s.size]
            assert np.isfinite(stats[:, [s.columns.index(c) for c in ("mean", "std", "min", "max")]]).all()
        # The last recorded step against the model as it was then (every=1: step 5).
        if every == 1:
            view = LiveView(w.stream)
            view.publish(final=True)
            update = view._update
            width = len(view._stat_columns)
            rows = np.frombuffer(update["stats"], np.float32).reshape(-1, width)
            hists = np.frombuffer(update["hists"], np.int32).reshape(-1, BINS)
            assert len(rows) == len(hists) == sum(s.size for s in w.stream.series.values())
            assert (hists.sum(axis=1) == 256).all()
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    assert len(traces) <= 2, len(traces)  # one per watch policy (every=1, every=2)


def check_watch_update_takes_float64_summaries():
    import jax
    import jax.numpy as jnp

    from jaxcapture_nb import summarize, watch

    values = jnp.asarray(np.random.default_rng(4).normal(size=100) * 1e200)
    summaries = jax.jit(lambda v: {"big": summarize(v, bins=BINS)})
    with watch(display=False, bins=BINS) as w:
        for step in range(3):
            w.update(step, summaries(values * (step + 1)))
    (series,) = w.stream.series.values()
    assert series.size == 3
    # Statistics beyond float32's range: the live view draws them in float32 (+-3.4e38 at most).
    assert (series.hists[:3].sum(axis=1) == 100).all()


def check_compare_modes_on_a_float64_model():
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jaxcapture_nb import compare_modes
    from jaxcapture_nb.views.compare_view import CompareView

    class Float64NormDropout(nnx.Module):
        def __init__(self, rngs):
            kw = {"param_dtype": jnp.float64, "dtype": jnp.float64}
            self.linear = nnx.Linear(4, 8, rngs=rngs, **kw)
            self.norm = nnx.BatchNorm(8, rngs=rngs, **kw)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            h = self.dropout(self.norm(self.linear(x)))
            self.sow(nnx.Intermediate, "h", h)
            self.sow(nnx.Intermediate, "big", h * 1e300)
            return h.sum()

    model = Float64NormDropout(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(2), (32, 4), jnp.float64)
    result = compare_modes(model, x, bins=BINS)
    assert result.modes == ["train", "eval"], result.modes
    sites = {s.site: s for s in result.sites}
    h = sites["h"]
    assert np.isfinite(h.shifts).all() and h.shifts[1] > 0, h.shifts
    assert (h.hists.sum(axis=1) == 32 * 8).all()
    big = sites["big"]
    means = big.stats[:, 0]
    assert np.isfinite(means).all() and np.abs(big.stats[:, 2:4]).max() > 1e299, big.stats
    assert (big.hists.sum(axis=1) == 32 * 8).all()
    view = CompareView(result)
    stats = np.frombuffer(view._stats, np.float64)
    assert np.isfinite(stats[np.isfinite(stats)]).all() and np.abs(stats).max() > 1e299


def check_capture_view_payload_keeps_float64_and_int64_values():
    import jax.numpy as jnp
    from flax import nnx

    from jaxcapture_nb import capture
    from jaxcapture_nb.views import payload

    class Wide(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "big", x * 1e300)
            self.sow(nnx.Intermediate, "ids", (2**62 + jnp.arange(x.size, dtype=jnp.int64)).reshape(x.shape))
            self.sow(nnx.Intermediate, "small", x.astype(jnp.float32))
            return x

    x = jnp.asarray(np.random.default_rng(1).normal(size=(12, 10)))
    model = Wide()
    with capture(model, bins=BINS) as cap:
        model(x)
    view = cap.show()
    labels = [row["label"] for row in view._sites]
    stats = np.frombuffer(view._stats, np.float64).reshape(len(labels), len(payload.STAT_COLUMNS))
    recs = records_by_name(cap)
    for name in ("big", "ids", "small"):
        row = dict(zip(payload.STAT_COLUMNS, stats[labels.index(name)], strict=True))
        s = recs[name].summary
        for c in ("mean", "std", "min", "max"):
            assert row[c] == float(getattr(s, c)), (name, c, row[c], float(getattr(s, c)))
    big = dict(zip(payload.STAT_COLUMNS, stats[labels.index("big")], strict=True))
    assert abs(big["max"]) > 1e299 and np.isfinite(big["mean"])
    ids = dict(zip(payload.STAT_COLUMNS, stats[labels.index("ids")], strict=True))
    assert ids["min"] == float(2**62) and ids["max"] == float(2**62 + 119)
    hists = np.frombuffer(view._hists, np.int32).reshape(len(labels), BINS)
    assert (hists.sum(axis=1) == 120).all()
    assert hists[labels.index("ids")].tolist() == exact_integer_summary(recs["ids"].value, BINS)["hist"]
    # The heatmap of float64 values beyond float32's range: finite colours, not +-Inf.
    view._selected = labels.index("big")
    pixels = np.frombuffer(view._heatmap, np.uint8)
    assert pixels.size == 120 and pixels.max() < payload.NAN_INDEX, sorted(set(pixels.tolist()))
    assert len(set(pixels.tolist())) > 10
    lo, hi = view._heatmap_range
    assert lo < 0 < hi and hi > 1e299


def main(out_path: str) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)  # before any JAX computation
    jax.config.update("jax_numpy_rank_promotion", "raise")
    warnings.filterwarnings("error", module="jaxcapture_nb")
    import jax.numpy as jnp

    from jaxcapture_nb import summarize

    report = {}
    for name, check in CHECKS.items():
        try:
            check()
            report[name] = "ok"
        except Exception:
            report[name] = traceback.format_exc()
    report["float32 summaries"] = {
        label: summary_bits(summarize(jnp.asarray(x), bins=BINS)) for label, x in float32_cases().items()
    }
    with open(out_path, "w") as f:
        json.dump(report, f)


CHECKS = {name: fn for name, fn in sorted(globals().items()) if name.startswith("check_") and callable(fn)}
# check_float_summary and check_integer_summary are helpers, not checks.
CHECKS = {k: v for k, v in CHECKS.items() if k not in ("check_float_summary", "check_integer_summary")}


if __name__ == "__main__":
    main(sys.argv[1])
