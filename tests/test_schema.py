"""The view schema: one entry makes a statistic, and every view that lists statistics shows it."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxcapture_nb import (
    CaptureView,
    CompareView,
    LiveView,
    capture,
    compare_modes,
    mode_panel,
    register_statistic,
    remove_statistic,
    summarize,
    watch,
)
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.records import flat_stats
from jaxcapture_nb.views.compare_static import comparison_html
from jaxcapture_nb.views.static import static_html

# The largest magnitude among the finite values: derived from min and max.
ABSMAX = schema.Stat(
    "absmax", "largest |x|", "absmax", column=True, derive=lambda st: max(abs(st["min"]), abs(st["max"]))
)


class LinearDropout(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "h", h)
        return self.dropout(h)


@pytest.fixture
def statistics():
    """Adds statistics as a user does (register_statistic), and removes them after the test."""
    added = []

    def add(stat):
        fields = {f: getattr(stat, f) for f in ("header", "format", "derive", "reduce", "compact")}
        added.append(register_statistic(stat.key, stat.label, **fields))

    yield add
    for stat in added:
        remove_statistic(stat.key)


@pytest.fixture
def absmax(statistics):
    statistics(ABSMAX)


def test_a_statistic_added_to_the_schema_reaches_every_view(absmax):
    model = LinearDropout(nnx.Rngs(0))
    x = jnp.linspace(-2.0, 2.0, 24).reshape(8, 3)
    with capture(model) as cap:
        model(x)
    h = cap.records[0]
    expected = max(abs(float(h.value.min())), abs(float(h.value.max())))

    # The text table: a column of its own, before the NaN/Inf column.
    header, row = cap.table().splitlines()[:2]
    assert header.split()[-2:] == ["absmax", "nan/inf"]
    assert row.split()[-2] == schema.number_text(expected)

    # The static HTML tables of a capture and of a comparison.
    assert "<th>absmax</th>" in static_html(cap.records)
    comparison = compare_modes(model, x)
    page = comparison_html(comparison)
    assert page.count(">absmax</th>") == len(comparison.modes)

    # The widgets: the schema each sends, and the columns of their buffers.
    view = CaptureView(cap)
    assert view._stat_columns[-1] == "absmax" and view._schema["stats"][-1]["key"] == "absmax"
    stats = np.frombuffer(view._stats, np.float64).reshape(len(cap.records), -1)
    assert stats[0, -1] == pytest.approx(expected)
    shown = CompareView(comparison)
    assert "absmax" in shown._stat_columns and shown._schema["stats"][-1]["label"] == "largest |x|"
    assert len(shown._stats) == len(comparison.sites) * 2 * len(shown._stat_columns) * 8
    panel = mode_panel(model, inputs=(x,))
    assert "absmax" in panel._compare_stat_columns and panel._schema["stats"][-1]["key"] == "absmax"
    live = LiveView(Stream(bins=8, include=None, every=1, keep_steps=4, grads=False))
    assert live._schema["stats"][-1]["key"] == "absmax" and "absmax" in live._stat_columns


def test_the_schema_travels_as_json():
    sent = schema.as_json()
    assert json.loads(json.dumps(sent)) == sent
    assert [n["index"] for n in sent["nonfinite"]] == [253, 254, 255]
    assert sent["colours"]["series"] == schema.SERIES_COLOUR  # --jcnb-series in every widget


def test_the_live_rows_match_the_schema():
    # A live row: what one step records, then the percentiles; the view
    # receives the columns of the stream it shows.
    percentiles = tuple(f"p{q}" for q in schema.PERCENTILES)
    assert schema.live_columns() == (*schema.LIVE_STAT_KEYS, *percentiles)
    stream = Stream(bins=8, include=None, every=1, keep_steps=4, grads=False)
    assert stream.layout.columns == schema.live_columns() and stream.layout.derived == ()
    assert LiveView(stream)._stat_columns == list(schema.live_columns())


def test_a_derived_statistic_is_a_column_of_the_live_rows(statistics):
    made_before = Stream(bins=16, include=None, every=1, keep_steps=4, grads=False)
    statistics(ABSMAX)
    percentiles = tuple(f"p{q}" for q in schema.PERCENTILES)
    columns = (*schema.LIVE_STAT_KEYS, "absmax", *percentiles)
    assert schema.live_columns() == columns
    # A stream takes the schema's columns as it is made.
    assert "absmax" not in made_before.layout.columns

    values = jnp.linspace(-3.0, 2.0, 12)
    stacked = jax.vmap(lambda v: summarize(v, bins=16))(values.reshape(3, 4))
    with watch(bins=16, display=False) as w:
        # One summary (rows made in a batch) and a stacked one (pooled on its own).
        w.update(0, {"one": summarize(values, bins=16), "stacked": stacked})
    view = LiveView(w.stream)
    assert view._stat_columns == list(columns)
    assert [s.label for s in w.stream.series.values()] == ["one", "stacked"]
    for series in w.stream.series.values():
        assert series.columns == columns and series.size == 1
        row = dict(zip(columns, series.stats[0].tolist(), strict=True))
        assert row["absmax"] == 3.0 and row["min"] == -3.0 and row["p100"] == 2.0
    view.publish(final=True)
    rows = np.frombuffer(view._update["stats"], np.float32).reshape(-1, len(columns))
    assert rows[:, columns.index("absmax")].tolist() == [3.0, 3.0]


def test_a_derived_statistic_that_cannot_be_computed_is_nan(statistics):
    broken = dataclasses.replace(ABSMAX, derive=lambda st: st["missing"])
    statistics(broken)
    assert np.isnan(schema.with_derived({})["absmax"])


# The share of values above 1 in magnitude: computed on the device, one
# entry of the schema, like a derived statistic.
BIG_PCT = schema.Stat(
    "big_pct", "|x| > 1 %", "|x|>1%", "percent", column=True, reduce=lambda v: 100.0 * (jnp.abs(v) > 1)
)


def share_above_one(values) -> float:
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    return 100.0 * float(np.mean(np.abs(finite) > 1))


def test_a_statistic_reduced_on_the_device_reaches_summaries_views_pictures_and_logs(statistics, tmp_path):
    from tensorboard.backend.event_processing import event_accumulator

    from jaxcapture_nb import open_run
    from tests.models import PerturbedMLP
    from tests.training import watched_training

    values = jnp.array([0.5, -2.0, 3.0, jnp.nan, 0.0, 1.0])
    before = summarize(values)
    statistics(BIG_PCT)

    # summarize: the one-array program compiled before is traced again; a
    # table of small values, a large value summarized alone, a stacked
    # summary and a user's jit agree.
    after = summarize(values)
    assert before.stats.shape == (6,) and after.stats.shape == (7,)
    assert float(after.statistic("big_pct")) == pytest.approx(40.0)
    np.testing.assert_array_equal(after.stats[:6], before.stats)
    many = summarize({"a": values, "b": jnp.arange(-3.0, 3.0), "c": jnp.ones((400, 400)) * 2})
    assert [float(s.statistic("big_pct")) for s in many.values()] == pytest.approx([40.0, 50.0, 100.0])
    stacked = jax.vmap(summarize)(jnp.arange(-6.0, 6.0).reshape(3, 4))
    assert stacked.statistic("big_pct").tolist() == pytest.approx([100.0, 25.0, 100.0])
    assert float(jax.jit(summarize)(values).statistic("big_pct")) == pytest.approx(40.0)

    # The text table, the widgets and their saved views.
    model = LinearDropout(nnx.Rngs(0))
    x = jnp.linspace(-2.0, 2.0, 24).reshape(8, 3)
    with capture(model) as cap:
        model(x)
    expected = share_above_one(cap.records[0].value)
    header, row = cap.table().splitlines()[:2]
    assert header.split()[-2:] == ["|x|>1%", "nan/inf"]
    assert row.split()[-2] == f"{expected:.1f}"
    view = CaptureView(cap)
    stats = np.frombuffer(view._stats, np.float64).reshape(len(cap.records), -1)
    assert stats[0, view._stat_columns.index("big_pct")] == pytest.approx(expected, rel=1e-6)
    assert "<th>|x|&gt;1%</th>" in view._repr_mimebundle_()[0]["text/html"]
    comparison = compare_modes(model, x)
    shown = CompareView(comparison)
    assert "big_pct" in shown._stat_columns
    assert comparison_html(comparison).count(">|x|&gt;1%</th>") == len(comparison.modes)
    panel = mode_panel(model, inputs=(x,))
    assert "big_pct" in panel._compare_stat_columns

    # A watched training step (its values go through the step's table), its
    # live rows and its TensorBoard log, and the log opened again.
    model = PerturbedMLP(nnx.Rngs(0))
    x, y = jax.random.normal(jax.random.key(1), (8, 4)), jnp.ones((8, 1))
    with capture(model) as first_step:
        model(x)
    expected = share_above_one(first_step.records[0].value)
    w = watched_training(model, optax.adam(1e-2), x, y, steps=3, log_dir=tmp_path)
    (series,) = w.stream.series.values()
    column = series.columns.index("big_pct")
    assert series.stats[0, column] == pytest.approx(expected, rel=1e-6)
    assert LiveView(w.stream)._stat_columns == list(series.columns)
    log = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"scalars": 0}).Reload()
    logged = [e.value for e in log.Scalars("act/big_pct")]
    np.testing.assert_array_equal(np.float32(logged), series.stats[: series.size, column])
    (opened,) = open_run(tmp_path).stream.series.values()
    np.testing.assert_array_equal(opened.stats[: opened.size, column], series.stats[: series.size, column])


class LargeSowingLayer(nnx.Module):
    """A layer whose output is too large for the step's table: its summary is made inside the step."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(64, 4096, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "h", h)
        return h.mean()


def test_a_step_compiled_before_a_statistic_was_added_records_it_as_nan_and_loses_nothing(statistics):
    model = LargeSowingLayer(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(0), (64, 64))
    step = nnx.jit(lambda model, x: model(x))
    with watch(model, display=False) as before:
        step(model, x)
    statistics(BIG_PCT)
    with watch(model, display=False) as after:
        step(model, x)  # as compiled before the statistic was added
    with capture(model, keep="summary") as cap:
        step(model, x)  # traced again: a capture hands its values out otherwise
    (old,), (new,) = before.stream.series.values(), after.stream.series.values()
    row = dict(zip(new.columns, new.stats[0].tolist(), strict=True))
    assert np.isnan(row["big_pct"])
    np.testing.assert_array_equal(new.hists[0], old.hists[0])
    assert row["mean"] == old.stats[0, old.columns.index("mean")]
    expected = share_above_one(model.linear(x))
    assert flat_stats(cap.records[0].summary)["big_pct"] == pytest.approx(expected, rel=1e-5)


def test_register_statistic_refuses_what_no_view_could_show(statistics):
    statistics(ABSMAX)
    with pytest.raises(ValueError, match="registered already"):
        register_statistic("absmax", "again", derive=lambda st: 0.0)
    with pytest.raises(ValueError, match="exactly one of derive= .* and reduce="):
        register_statistic("both", "both", derive=lambda st: 0.0, reduce=lambda v: v)
    with pytest.raises(ValueError, match="exactly one"):
        register_statistic("neither", "neither")
    with pytest.raises(ValueError, match="letters, digits"):
        register_statistic("big pct", "big", derive=lambda st: 0.0)
    with pytest.raises(ValueError, match="format must be one of number, percent, count"):
        register_statistic("ratio", "ratio", format="fraction", derive=lambda st: 0.0)
    with pytest.raises(ValueError, match="package's own"):
        remove_statistic("mean")
    with pytest.raises(KeyError, match="no statistic 'nothing'"):
        remove_statistic("nothing")
    assert [s.key for s in schema.STATS].count("absmax") == 1


def test_a_removed_statistic_leaves_the_views_made_afterwards():
    register_statistic("absmax", "largest |x|", derive=ABSMAX.derive)
    assert "absmax" in schema.live_columns() and "absmax" in cap_header()
    remove_statistic("absmax")
    assert "absmax" not in schema.live_columns() and "absmax" not in cap_header()
    assert tuple(s.key for s in schema.STATS) == schema.BUILT_IN


def cap_header() -> str:
    model = LinearDropout(nnx.Rngs(0))
    with capture(model) as cap:
        model(jnp.ones((2, 3)))
    return cap.table().splitlines()[0]


def _luminance(colour: str) -> float:
    """WCAG's relative luminance of a ``#rrggbb`` colour."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted([_luminance(a), _luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("background", ["#ffffff", "#111111", "#1e1e1e"])
def test_run_and_series_colours_stand_out_3_to_1_in_light_and_dark_themes(background):
    """WCAG AA for graphics, against white and the dark backgrounds of JupyterLab and VS Code."""
    for colour in (*schema.MODE_COLOURS, schema.SERIES_COLOUR, schema.MEDIAN_COLOUR):
        assert _contrast(colour, background) >= 3.0, (colour, background)
    # The runs' colours are told apart from each other too.
    assert len(set(schema.MODE_COLOURS)) == len(schema.MODE_COLOURS)
