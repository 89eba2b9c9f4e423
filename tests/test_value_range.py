"""Fill values and value ranges: found and computed on the device, and what CaptureView sends of them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcapture_nb import capture, register_statistic, remove_statistic, summarize
from jaxcapture_nb.views import payload, value_range
from jaxcapture_nb.views.fills import FAR, Fill, find_fills, may_hold_fill, near_limit
from jaxcapture_nb.views.value_range import compute_range

BINS = 64


def attention_logits(monkeypatch, dtype):
    """The masked causal logits a real ``nnx.MultiHeadAttention`` computes, as its softmax receives them."""
    seen = []
    softmax = jax.nn.softmax

    def recording(x, *args, **kwargs):
        seen.append(x)
        return softmax(x, *args, **kwargs)

    attention = nnx.MultiHeadAttention(
        num_heads=4, in_features=16, qkv_features=16, decode=False, dtype=dtype, rngs=nnx.Rngs(0)
    )
    x = jax.random.normal(jax.random.key(1), (2, 12, 16))
    monkeypatch.setattr(jax.nn, "softmax", recording)
    # Sowing the weights takes Flax's own path through dot_product_attention_weights,
    # where the mask is applied (else it hands everything to jax.nn.dot_product_attention).
    attention(x, mask=nnx.make_causal_mask(x[..., 0]), sow_weights=True)
    monkeypatch.undo()
    (logits,) = seen
    return logits


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_the_mask_of_flax_attention_logits_is_found_and_left_out(monkeypatch, dtype):
    logits = attention_logits(monkeypatch, dtype)
    assert logits.shape == (2, 4, 12, 12) and logits.dtype == dtype
    masked = np.broadcast_to(~np.tril(np.ones((12, 12), bool)), logits.shape)
    (fill,) = find_fills(logits)
    assert fill.side == "low" and fill.exact
    assert fill.value == float(jnp.finfo(dtype).min)  # Flax's mask value
    assert fill.count == masked.sum() == 2 * 4 * 66
    scores = np.asarray(logits, np.float32)[~masked]
    ranged = compute_range(logits, (fill,), robust=False, bins=BINS)
    assert (ranged.lo, ranged.hi) == (scores.min(), scores.max())
    assert ranged.hist.sum() == scores.size and ranged.under == ranged.over == 0
    assert ranged.rest["count"] == scores.size
    np.testing.assert_allclose(ranged.rest["mean"], scores.mean(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ranged.rest["std"], scores.std(), rtol=1e-5)
    # Robust: the percentiles of the scores alone; the values beyond are counted.
    robust = compute_range(logits, (fill,), robust=True, bins=BINS)
    np.testing.assert_allclose([robust.lo, robust.hi], np.percentile(scores, [0.5, 99.5]), rtol=1e-5)
    assert robust.under > 0 and robust.over > 0
    assert robust.hist.sum() + robust.under + robust.over == scores.size


def causal_scores(shape=(2, 4, 32, 32), dtype=jnp.float32, key=0):
    """Attention scores q.k / sqrt(d) of random queries and keys, and the causal mask (True where attended)."""
    q, k = jax.random.normal(jax.random.key(key), (2, *shape[:-1], 16))
    scores = (jnp.einsum("bhqd,bhkd->bhqk", q, k[..., : shape[-1], :]) / 4).astype(dtype)
    return scores, np.broadcast_to(np.tril(np.ones(shape[-2:], bool)), shape)


MASK_VALUES = {
    "-1e9": -1e9,  # GPT-OSS and many tutorials
    "-9e15": -9e15,  # graph attention networks (pyGAT)
    "float32 min literal": -3.4028235e38,
    "finfo(float32).min": jnp.finfo(jnp.float32).min,  # Flax
    "0.7 finfo(float32).min": jnp.finfo(jnp.float32).min * 0.7,
}


@pytest.mark.parametrize("mask_value", MASK_VALUES.values(), ids=MASK_VALUES.keys())
def test_causal_masks_of_published_models_are_fills_whatever_their_size(mask_value):
    scores, attended = causal_scores()
    logits = jnp.where(attended, scores, mask_value)
    assert may_hold_fill(summarize(logits))  # the summary alone lets it be looked for
    (fill,) = find_fills(logits)
    assert (fill.side, fill.exact, fill.count) == ("low", True, (~attended).sum())
    assert fill.value == float(np.float32(mask_value))
    kept = np.asarray(scores)[attended]
    ranged = compute_range(logits, (fill,), robust=False, bins=BINS)
    assert (ranged.lo, ranged.hi) == (kept.min(), kept.max())
    assert ranged.hist.sum() == kept.size == ranged.rest["count"]
    np.testing.assert_allclose(ranged.rest["mean"], kept.mean(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ranged.rest["std"], kept.std(), rtol=1e-5)
    assert ranged.rest["zero_pct"] == 0.0


def test_bfloat16_logits_masked_with_minus_1e9_have_the_fill_as_bfloat16_rounds_it():
    scores, attended = causal_scores(dtype=jnp.bfloat16)
    logits = jnp.where(attended, scores, jnp.asarray(-1e9, jnp.bfloat16))
    assert logits.dtype == jnp.bfloat16
    (fill,) = find_fills(logits)
    assert fill.value == float(jnp.bfloat16(-1e9)) != -1e9
    assert (fill.side, fill.count) == ("low", (~attended).sum())
    ranged = compute_range(logits, (fill,), robust=False, bins=BINS)
    kept = np.asarray(scores, np.float32)[attended]
    assert (ranged.lo, ranged.hi) == (kept.min(), kept.max())


def test_a_fill_above_the_values_is_found_on_the_high_side():
    # Path lengths with a large number for "no edge", as shortest-path code writes them.
    lengths = jax.random.uniform(jax.random.key(0), (64, 64), minval=1.0, maxval=20.0)
    edges = jax.random.bernoulli(jax.random.key(1), 0.3, (64, 64))
    x = jnp.where(edges, lengths, 1e9)
    (fill,) = find_fills(x)
    assert (fill.side, fill.value, fill.limit, fill.count) == ("high", 1e9, 1e9, int((~edges).sum()))
    ranged = compute_range(x, (fill,), robust=False, bins=BINS)
    assert ranged.rest["count"] == int(edges.sum()) and ranged.hi < 20


def test_fills_at_both_ends_are_both_found():
    scores, attended = causal_scores()
    x = jnp.where(attended, scores, -1e9).at[:, :, :, 0].set(1e9)  # the first key's column, high
    low, high = find_fills(x)
    assert (low.side, low.value, high.side, high.value) == ("low", -1e9, "high", 1e9)
    ranged = compute_range(x, (low, high), robust=False, bins=BINS)
    assert -10 < ranged.lo < ranged.hi < 10


def test_a_mask_that_holds_most_elements_is_still_a_fill():
    # Causal and padding masks together: 6 of 32 keys are tokens.
    scores, attended = causal_scores()
    attended = attended & (np.arange(32) < 6)
    (fill,) = find_fills(jnp.where(attended, scores, -1e9))
    assert fill.count == (~attended).sum() and fill.count / attended.size > 0.8


def _relu_with_60_percent_zeros():
    x = nnx.relu(jax.random.normal(jax.random.key(0), (64, 256)) - 0.2533)
    assert 0.59 < float((x == 0).mean()) < 0.61
    return x


def _heavy_tailed():
    cauchy = jax.random.cauchy(jax.random.key(0), (64, 256))
    # A long tail and a floor holding a share: log-probabilities clipped at log(1e-30).
    log_probabilities = jax.nn.log_softmax(jax.random.normal(jax.random.key(1), (64, 256)) * 8)
    floored = jnp.maximum(log_probabilities, np.log(1e-30))
    return [cauchy, jnp.exp(3 * jax.random.normal(jax.random.key(2), (64, 256))), floored]


ORDINARY = {
    "relu 60% zeros": lambda: [_relu_with_60_percent_zeros()],
    "one-hot": lambda: [
        jax.nn.one_hot(jax.random.randint(jax.random.key(0), (256,), 0, 10), 10),
        jax.nn.one_hot(jax.random.randint(jax.random.key(0), (256,), 0, 100), 100),
    ],
    "mostly one constant": lambda: [
        jnp.full((64, 64), 3.0),
        jnp.ones((64, 64)).at[0, :40].set(jax.random.uniform(jax.random.key(0), (40,), maxval=0.9)),
        jnp.ones((64, 64)).at[0, :40].set(1 + 1e-3 * jax.random.normal(jax.random.key(0), (40,))),
        jnp.zeros((64, 64)).at[0, :40].set(1.0),
        jnp.where(jnp.tril(jnp.ones((64, 64), bool)), 0.0, -1e9),  # an additive mask alone: no scores
    ],
    "heavy tails": _heavy_tailed,
    "integers": lambda: [
        jax.random.randint(jax.random.key(0), (64, 64), -(2**31), 2**31 - 1),
        jnp.full((64, 64), jnp.iinfo(jnp.int32).min).at[0].set(5),
        # Token ids as floats, a third of them the padding id -1.
        jnp.where(jnp.arange(4096) % 3 == 0, -1.0, jax.random.randint(jax.random.key(1), (4096,), 0, 50_000)),
    ],
}


@pytest.mark.parametrize("make", ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_data_has_no_fill(make):
    for x in make():
        assert find_fills(x) == (), x


def test_a_single_value_must_lie_far_beyond_the_range_of_the_rest():
    scores = jax.random.uniform(jax.random.key(0), (4096,), minval=-1.0, maxval=1.0)
    spread = float(scores.max() - scores.min())
    gap = FAR * spread
    masked = jnp.arange(4096) % 2 == 0
    assert find_fills(jnp.where(masked, float(scores.min()) - 1.01 * gap, scores))
    assert not find_fills(jnp.where(masked, float(scores.min()) - 0.99 * gap, scores))
    # 1% of the elements is enough, fewer is not.
    assert find_fills(jnp.where(jnp.arange(4096) < 41, -1e9, scores))
    assert not find_fills(jnp.where(jnp.arange(4096) < 40, -1e9, scores))


def test_nan_and_inf_neither_make_nor_hide_a_fill():
    scores, attended = causal_scores()
    logits = jnp.where(attended, scores, -1e9).at[0, 0, 0, 1:4].set(jnp.array([jnp.nan, jnp.inf, -jnp.inf]))
    (fill,) = find_fills(logits)
    assert (fill.value, fill.count) == (-1e9, (~attended).sum() - 3)
    assert find_fills(jnp.full((8, 8), jnp.nan)) == () and find_fills(jnp.full((8, 8), -jnp.inf)) == ()


def test_a_stacked_summary_lets_a_fill_be_looked_for():
    scores, attended = causal_scores()
    logits = jnp.where(attended, scores, -1e9)
    # Scanned layers: their summaries stack, each over its own range.
    stacked = jax.vmap(summarize)(jnp.stack([logits, scores * 100]))
    assert stacked.stacked_shape == (2,) and may_hold_fill(stacked)
    assert not may_hold_fill(summarize(scores))
    assert not may_hold_fill(summarize(_relu_with_60_percent_zeros()))


def test_a_hand_built_mask_at_seven_tenths_of_float32s_limit_is_a_fill():
    scores = jax.random.normal(jax.random.key(0), (3, 40, 40)) * 2
    fill_value = jnp.finfo(jnp.float32).min * 0.7
    logits = jnp.where(jnp.tril(jnp.ones((40, 40), bool)), scores, fill_value)
    (fill,) = find_fills(logits)
    assert (fill.side, fill.count, fill.exact) == ("low", 3 * 780, True)
    assert fill.value == float(np.float32(fill_value))
    ranged = compute_range(logits, (fill,), robust=False, bins=BINS)
    kept = np.asarray(scores)[:, np.tril(np.ones((40, 40), bool))]
    assert ranged.lo == kept.min() and ranged.hi == kept.max()


def test_ordinary_values_have_no_fill_and_keep_their_full_range():
    x = jax.random.normal(jax.random.key(0), (64, 64)) * 1e3
    assert find_fills(x) == ()
    assert not near_limit("float32", float(x.min()), float(x.max()))
    ranged = compute_range(x, (), robust=False, bins=BINS)
    assert (ranged.lo, ranged.hi) == (float(x.min()), float(x.max()))
    assert ranged.hist.sum() == x.size
    # Integers and booleans have no fill, whatever their values.
    assert find_fills(jnp.full((8,), jnp.iinfo(jnp.int32).min)) == ()
    assert find_fills(jnp.ones((4, 4), bool)) == ()


def test_a_few_values_near_the_limit_are_no_fill():
    x = jax.random.normal(jax.random.key(0), (100, 100)).at[0, :50].set(3e38)  # 0.5 % of the elements
    assert near_limit("float32", float(x.min()), float(x.max()))
    assert find_fills(x) == ()
    # Their statistics stay finite: the sums are scaled, not overflowed.
    ranged = compute_range(x, (), robust=False, bins=BINS)
    assert np.isfinite([ranged.rest["mean"], ranged.rest["std"]]).all()
    np.testing.assert_allclose(ranged.rest["mean"], 3e38 * 50 / x.size, rtol=1e-3)


def test_a_fill_at_the_largest_value_is_found_on_the_high_side():
    x = jnp.arange(100.0).reshape(10, 10)
    x = jnp.where(x % 3 == 0, jnp.finfo(jnp.float32).max, x)
    (fill,) = find_fills(x)
    assert (fill.side, fill.value, fill.count) == ("high", float(jnp.finfo(jnp.float32).max), 34)
    ranged = compute_range(x, (fill,), robust=False, bins=BINS)
    assert (ranged.lo, ranged.hi, ranged.rest["count"]) == (1.0, 98.0, 66)


def test_fills_that_are_not_one_value_are_found_and_said_to_be_a_range():
    x = jnp.where(jnp.arange(20) < 10, jnp.arange(20.0), -3e38 + jnp.arange(20.0) * 1e36)
    (fill,) = find_fills(x)
    assert fill.count == 10 and not fill.exact and fill.value == float(np.float32(-3e38 + 10 * 1e36))


def test_an_array_of_nothing_but_the_fill_has_no_range_left():
    x = jnp.full((4, 4), jnp.finfo(jnp.float32).min)
    (fill,) = find_fills(x)
    assert fill.count == 16
    ranged = compute_range(x, (fill,), robust=False, bins=BINS)
    assert ranged.rest["count"] == 0 and np.isnan([ranged.lo, ranged.hi]).all() and ranged.hist.sum() == 0


def test_marks_pack_four_to_a_byte():
    fill = Fill("low", -1e37, -2e38, 1, True)
    marks = value_range.marks(np.array([[-2e38, -5.0, np.nan], [0.5, 9.0, -np.inf]]), 0.0, 1.0, [fill])
    assert marks.tolist() == [[3, 1, 0], [0, 2, 0]]
    packed = np.frombuffer(value_range.packed(marks), np.uint8)
    assert [(packed[k >> 2] >> ((k & 3) * 2)) & 3 for k in range(6)] == marks.ravel().tolist()


# -- CaptureView -------------------------------------------------------------------


class Attention(nnx.Module):
    """Masked logits as published models fill them, beside ordinary values."""

    def __call__(self, scores):
        causal = jnp.tril(jnp.ones(scores.shape[-2:], bool))
        self.sow(nnx.Intermediate, "logits", jnp.where(causal, scores, jnp.finfo(jnp.float32).min * 0.7))
        self.sow(nnx.Intermediate, "scores", scores)
        return scores


def attention_view(keep="all"):
    scores = jax.random.normal(jax.random.key(0), (2, 8, 24, 24))
    model = Attention()
    with capture(model, keep=keep) as cap:
        model(scores)
    return cap.show(), np.asarray(scores)


def test_selecting_masked_logits_starts_without_the_fill():
    view, scores = attention_view()
    view._selected = 0
    answer = view._range
    assert answer["mode"] == "fill" and answer["modes"] == ["full", "fill", "robust"]
    (fill,) = answer["fills"]
    assert fill["count"] == 2 * 8 * 276 and fill["exact"]
    kept = scores[np.broadcast_to(np.tril(np.ones((24, 24), bool)), scores.shape)]
    assert (answer["lo"], answer["hi"]) == (kept.min(), kept.max())
    assert np.frombuffer(view._range_hist, np.int32).sum() == kept.size == answer["rest"]["count"]
    # The heatmap's colours span the scores, and the masked cells are marked as the fill.
    lo, hi = view._heatmap_range
    assert kept.min() <= lo < hi <= kept.max()
    packed = np.frombuffer(view._heatmap_marks, np.uint8)
    marks = np.array([(packed[k >> 2] >> ((k & 3) * 2)) & 3 for k in range(24 * 24)]).reshape(24, 24)
    assert (marks[~np.tril(np.ones((24, 24), bool))] == 3).all()
    assert not (marks[np.tril(np.ones((24, 24), bool))] == 3).any()


def test_the_full_and_robust_ranges_are_one_click_away():
    view, _ = attention_view()
    view._selected = 0
    view._range_mode = "full"
    assert view._range["mode"] == "full" and view._range_hist == b""
    assert view._heatmap_range[0] < -1e38  # today's picture: the mask against everything else
    view._range_mode = "robust"
    answer = view._range
    assert answer["mode"] == "robust" and answer["under"] > 0 and answer["over"] > 0
    assert view._heatmap_range == [answer["lo"], answer["hi"]]
    hist = np.frombuffer(view._range_hist, np.int32)
    assert hist.sum() + answer["under"] + answer["over"] == answer["rest"]["count"]
    # Ordinary values offer no fill and start at their full range.
    view._range_mode = "auto"
    view._selected = 1
    assert view._range["mode"] == "full" and view._range["modes"] == ["full", "robust"]
    assert view._range["fills"] == []


def test_keep_summary_says_why_the_range_is_fixed_and_that_a_fill_may_be_there():
    view, _ = attention_view(keep="summary")
    view._selected = 0
    answer = view._range
    assert answer["modes"] == ["full"] and "keep='summary' kept no values" in answer["note"]
    assert "-2.38e+38 may be a fill value" in answer["note"]
    view._selected = 1
    assert "may be a fill" not in view._range["note"]


def test_small_multiples_draw_one_slice_per_head_on_one_scale_within_the_budget():
    view, _ = attention_view()
    view._selected = 0
    view._facet_axis = 1
    assert view._heatmap_shape == [8, 24, 24] and view._heatmap_facets == list(range(8))
    assert view._heatmap_facet_axis == 1
    assert len(view._heatmap) == 8 * 24 * 24
    single = attention_view()[0]
    single._selected = 0
    assert view._heatmap_range == single._heatmap_range
    # A long axis shows its first MAX_FACETS, each small, the whole under 64 KiB.
    big = jnp.zeros((40, 300, 300))
    model = nnx.Module()
    with capture(model) as cap:
        model.sow(nnx.Intermediate, "big", big)
    wide = cap.show()
    wide._selected = 0
    wide._facet_axis = 0
    count, rows, cols = wide._heatmap_shape
    assert count == payload.MAX_FACETS and max(rows, cols) <= payload.FACET_MAX_SIDE
    assert len(wide._heatmap) + len(wide._heatmap_marks) < 64 * 1024


def test_values_within_the_colour_range_are_not_marked_when_its_ends_are_rounded():
    x = jnp.linspace(-1.2345678901234567, 2.3456789012345678, 30).reshape(5, 6)  # within mean +- 3 std
    model = nnx.Module()
    with capture(model) as cap:
        model.sow(nnx.Intermediate, "even", x)
    view = cap.show()
    view._selected = 0
    lo, hi = view._heatmap_range
    assert (lo, hi) == (round(float(x.min()), 12), round(float(x.max()), 12))
    assert view._heatmap_marks == b""


class AdditiveMasks(nnx.Module):
    """Logits masked as GPT-OSS (-1e9) and graph attention networks (-9e15) mask them, beside ReLU outputs."""

    def __call__(self, scores):
        causal = jnp.tril(jnp.ones(scores.shape[-2:], bool))
        self.sow(nnx.Intermediate, "gpt_logits", jnp.where(causal, scores, -1e9))
        self.sow(nnx.Intermediate, "gat_logits", jnp.where(causal, scores, -9e15))
        self.sow(nnx.Intermediate, "relu", nnx.relu(scores))
        return scores


def test_the_rows_of_masked_logits_leave_the_fill_out_as_the_details_do():
    scores = jax.random.normal(jax.random.key(0), (2, 8, 24, 24))
    model = AdditiveMasks()
    with capture(model) as cap:
        model(scores)
    view = cap.show()
    columns = list(view._stat_columns)
    stats = np.frombuffer(view._stats, np.float64).reshape(3, len(columns))
    mask_values = (-1e9, float(np.float32(-9e15)))
    assert [(s["site"], [f["value"] for f in s["fills"]]) for s in view._fill_sites] == [
        (0, [mask_values[0]]),
        (1, [mask_values[1]]),
    ]
    rows = np.frombuffer(view._fill_stats, np.float64).reshape(2, len(columns))
    hists = np.frombuffer(view._fill_hists, np.int32).reshape(2, cap.bins)
    kept = np.asarray(scores)[np.broadcast_to(np.tril(np.ones((24, 24), bool)), scores.shape)]
    for k, fill_value in enumerate(mask_values):
        row = dict(zip(columns, rows[k].tolist(), strict=True))
        assert (row["min"], row["max"]) == (row["lo"], row["hi"]) == (kept.min(), kept.max())
        np.testing.assert_allclose([row["mean"], row["std"]], [kept.mean(), kept.std()], rtol=1e-5, atol=1e-6)
        assert row["count"] == kept.size == hists[k].sum() and row["nan"] == 0 and row["zero_pct"] == 0
        # The site's own statistics stay as its summary has them, the fill included.
        assert stats[k, columns.index("min")] == fill_value
        # Its details start without the fill, over the same histogram and statistics.
        view._selected = k
        answer = view._range
        assert answer["mode"] == "fill" and answer["fills"][0]["value"] == fill_value
        assert np.frombuffer(view._range_hist, np.int32).tolist() == hists[k].tolist()
        assert answer["rest"]["mean"] == row["mean"] and answer["rest"]["count"] == row["count"]
    # ReLU outputs, zeros and all, keep their row.
    view._selected = 2
    assert view._range["fills"] == [] and view._range["mode"] == "full"


def test_a_registered_statistic_leaves_the_fill_out_of_masked_logits_rows_too():
    # Registered after the view's range program was first compiled, so it must trace again.
    scores = jax.random.normal(jax.random.key(0), (2, 4, 16, 16)) * 2
    model = AdditiveMasks()
    with capture(model) as cap:
        model(scores)
    cap.show()
    register_statistic("big_pct", "|x| > 1 %", format="percent", reduce=lambda v: 100.0 * (jnp.abs(v) > 1))
    try:
        with capture(model) as cap:
            model(scores)
        view = cap.show()
        columns = list(view._stat_columns)
        stats = np.frombuffer(view._stats, np.float64).reshape(3, len(columns))
        rows = np.frombuffer(view._fill_stats, np.float64).reshape(2, len(columns))
        kept = np.asarray(scores)[np.broadcast_to(np.tril(np.ones((16, 16), bool)), scores.shape)]
        big = columns.index("big_pct")
        # Without the fill, as every other statistic of the row; with it, the site's own.
        np.testing.assert_allclose(rows[:, big], 100.0 * np.mean(np.abs(kept) > 1), rtol=1e-5)
        whole = 100.0 * np.mean(np.abs(np.where(np.tril(np.ones((16, 16), bool)), scores, -1e9)) > 1)
        np.testing.assert_allclose(stats[0, big], whole, rtol=1e-5)
        assert rows[0, big] < stats[0, big]
        view._selected = 0
        np.testing.assert_allclose(view._range["rest"]["big_pct"], rows[0, big], rtol=1e-6)
    finally:
        remove_statistic("big_pct")
    assert "big_pct" not in value_range.compute_range(scores, [], robust=False, bins=4).rest


def test_a_capture_of_summaries_only_leaves_no_fill_out_of_its_rows():
    model = AdditiveMasks()
    with capture(model, keep="summary") as cap:
        model(jax.random.normal(jax.random.key(0), (2, 2, 8, 8)))
    view = cap.show()
    assert view._fill_sites == [] and view._fill_stats == b"" and view._fill_hists == b""
