"""A compiled step hands its small values over as one table, summarized by one program per table size."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcapture_nb import capture, watch
from jaxcapture_nb.runs.row_grid import RowGrid, kept_appends
from jaxcapture_nb.runs.rows import RowLayout
from jaxcapture_nb.runs.series import SeriesBlock
from jaxcapture_nb.stats import step_table
from jaxcapture_nb.stats.batch import device_layout, needs_careful, packed_rows, padded_table, table_size
from jaxcapture_nb.stats.step_table import StepTable
from jaxcapture_nb.stats.summarize import packed_summary

rng = np.random.default_rng(0)
VALUES = [
    rng.normal(size=(3,)).astype(np.float32),
    np.array([1.0, np.nan, -np.inf, 2.0], np.float32),
    rng.normal(size=(17, 31)).astype(np.float32),
    np.full((2, 2), 7.0, np.float32),
]


def rows_of(values, bins=16):
    arrays = [jnp.asarray(v) for v in values]
    table = padded_table(arrays)
    return table, np.asarray(packed_rows(table, device_layout(tuple(a.size for a in arrays)), bins=bins))


def assert_rows_equal(got, want):
    np.testing.assert_array_equal(got[6:], want[6:])  # counts: exact
    np.testing.assert_allclose(got[:6].view(np.float32), want[:6].view(np.float32), rtol=3e-6)


def test_each_value_of_a_padded_table_is_summarized_as_it_is_alone():
    table, rows = rows_of(VALUES)
    assert table.shape[0] % 16 == 0 and table.shape[0] >= 64  # rounded up to a table size
    for k, v in enumerate(VALUES):
        assert_rows_equal(rows[k], np.asarray(packed_summary(jnp.asarray(v), 16)))
    # Slots without a value count nothing.
    assert not rows[len(VALUES) :, 6:].any()


def test_stacked_tables_are_summarized_table_by_table():
    arrays = [jnp.asarray(v) for v in VALUES]
    stacked = jnp.stack([padded_table(arrays), padded_table([2 * a for a in arrays])])
    rows = np.asarray(packed_rows(stacked, device_layout(tuple(a.size for a in arrays)), bins=16))
    assert rows.shape[:2] == (2, 64)
    for k, a in enumerate(arrays):
        assert_rows_equal(rows[1, k], np.asarray(packed_summary(2 * a, 16)))


class Stack(nnx.Module):
    def __init__(self, widths, rngs):
        self.layers = nnx.List(
            [nnx.Linear(a, b, rngs=rngs) for a, b in zip(widths, widths[1:], strict=False)]
        )

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = jnp.tanh(layer(x))
            self.sow(nnx.Intermediate, f"h{i}", x)
        return x.sum()


@pytest.mark.parametrize("block", ["watch", "capture"])
def test_models_of_other_shapes_reuse_one_compiled_summary_program(block):
    def run(widths, batch):
        model = Stack(widths, nnx.Rngs(0))
        step = nnx.jit(lambda m, x: m(x))
        x = jnp.ones((batch, widths[0]))
        context = watch(model, display=False) if block == "watch" else capture(model, keep="summary")
        with context as c:
            step(model, x)
        return list(c.stream.series.values()) if block == "watch" else c.records

    run([4, 8, 8], 2)
    compiled = packed_rows.jitted._cache_size()
    # Other widths, depths and batch sizes: new steps, and tables of the same size.
    for widths, batch in (([3, 5, 7, 9, 11], 3), ([16, 2], 5), ([6] * 9, 1)):
        assert len(run(widths, batch)) == len(widths) - 1
    assert packed_rows.jitted._cache_size() == compiled


def test_a_step_hands_its_small_values_over_as_one_table(monkeypatch):
    from jaxcapture_nb.runs.stream import Stream

    tables = []
    deliver = Stream.deliver

    def spy(self, delivery):
        tables.extend(delivery.tables)
        deliver(self, delivery)

    monkeypatch.setattr(Stream, "deliver", spy)
    model = Stack([4, 8, 8, 8], nnx.Rngs(0))
    step = nnx.jit(lambda m, x: m(x))
    with watch(model, display=False) as w:
        step(model, jnp.ones((2, 4)))
    (table,) = tables
    assert [site.name for site in table.sites] == ["h0", "h1", "h2"]
    assert all(len(s.steps[: s.size]) == 1 for s in w.stream.series.values())


class Reader:
    """A view reading rows (held weakly by what it reads)."""


def test_a_block_writes_a_row_of_every_series_at_once_and_a_series_can_leave_it():
    layout = RowLayout()
    block = SeriesBlock([("a", "Intermediate"), ("b", "Intermediate")], bins=2, capacity=4, layout=layout)
    a, b = block.series
    reader = Reader()
    for step in range(3):
        stats = np.full((2, len(layout.columns)), step, np.float32)
        block.append(step, stats, np.ones((2, 2), np.int32))
    a.mark_read(reader)
    assert (a.size, b.size) == (3, 3) and b.stats[2, 0] == 2 and block.intact()
    # b gets a row of its own: it leaves the block with its rows; a stays.
    b.append_row(9, np.zeros(len(layout.columns)), np.zeros(2, np.int32))
    assert not block.intact()
    assert b.steps[: b.size].tolist() == [0, 1, 2, 9]
    block.append(3, np.full((2, len(layout.columns)), 3, np.float32), np.ones((2, 2), np.int32))
    assert a.steps[: a.size].tolist() == [0, 1, 2, 3] and b.steps[: b.size].tolist() == [0, 1, 2, 9]
    # Filling the block thins a's rows, and a reader of a learns from which row they changed.
    block.append(4, np.full((2, len(layout.columns)), 4, np.float32), np.ones((2, 2), np.int32))
    assert a.steps[: a.size].tolist() == [0, 2, 4]
    assert a.first_rewritten(reader) == 4  # thinning is told apart by the stream's version


def test_rows_a_later_step_replaces_are_not_made_and_their_nonfinite_values_still_flag(monkeypatch):
    import jaxcapture_nb.runs.settling as settling

    made = []
    row_stats = settling.row_stats

    def counting(summaries, sizes, layout=None):
        made.append(len(sizes))
        return row_stats(summaries, sizes, layout)

    monkeypatch.setattr(settling, "row_stats", counting)
    summarized = []
    packed = StepTable.packed

    def summarizing(table, bins, layout=None):
        summarized.append(table)
        return packed(table, bins, layout)

    monkeypatch.setattr(StepTable, "packed", summarizing)
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 1e9)  # the loop settles only here
    step = nnx.jit(lambda m, x: m(x))
    x = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
    scale = np.ones(30, np.float32)
    scale[17] = np.nan  # a step off the grid of kept steps, replaced by step 18
    histories = []
    for settle_each_step in (True, False):
        model = Stack([4, 8, 8], nnx.Rngs(0))
        with watch(model, display=False, keep_steps=4, publish="loop", steps="calls") as w:
            for i in range(30):
                step(model, x * scale[i])
                if settle_each_step or i == 0:
                    w.stream.settle()
            made.clear()
            summarized.clear()
            w.stream.settle()
        series = list(w.stream.series.values())
        histories.append([(s.steps[: s.size].tolist(), s.stats[: s.size].copy()) for s in series])
        assert w.stream.first_nonfinite == ("h0", 17)
    for (steps, stats), (one_by_one_steps, one_by_one_stats) in zip(histories[1], histories[0], strict=True):
        assert steps == one_by_one_steps == [0, 16, 29]
        np.testing.assert_array_equal(stats, one_by_one_stats)
    # Settled at once after the first step, rows were made for 10 of the other
    # 29 steps: those on the grid of kept steps as they came, and the last.
    # Only their tables were summarized; the others' NaN/Inf flags came
    # from the steps themselves.
    assert made == [10 * 2]
    assert len(summarized) == 10


@pytest.mark.parametrize("capacity", [2, 3, 4, 7, 16])
def test_the_rows_a_log_keeps_are_those_a_grid_keeps_as_rows_arrive(capacity):
    """``kept_appends`` counts what ``RowGrid.advance`` does without making the rows."""
    for count in range(12 * capacity):
        grid = RowGrid(capacity)
        for step in range(count):
            grid.advance(step, [])
        assert kept_appends(count, capacity) == tuple(grid.steps[: grid.size].tolist()), count


def test_readers_of_grid_members_each_learn_of_the_rewritten_latest_row():
    grid = RowGrid(capacity=4, members=2)
    rows = np.zeros((4, 2))
    for step in range(6):  # the fifth thins to a stride of 2, the sixth is off that grid
        grid.advance(step, [rows])
    reader = Reader()
    grid.mark_read(reader, 0)
    grid.mark_read(reader, 1)
    grid.advance(6, [rows])  # replaces the off-grid latest row
    assert grid.first_rewritten(reader, 0) == grid.first_rewritten(reader, 1) == grid.size - 1
    grid.mark_read(reader, 0)
    assert grid.first_rewritten(reader, 0) == 4 and grid.first_rewritten(reader, 1) == grid.size - 1


def test_a_capture_and_a_watch_compile_summaries_beside_the_step(monkeypatch):
    """Both start compiling the summaries as the step is traced, once per table size."""
    from jaxcapture_nb.upstream.jax_internals import tracing

    started = []

    def noting(sizes, dtype, bins):
        started.append(tracing())
        step_table.compile_ahead(sizes, dtype, bins)

    monkeypatch.setattr("jaxcapture_nb.backends.nnx.parcel.compile_ahead", noting)
    step = nnx.jit(lambda m, x: m(x))
    x = jnp.ones((2, 4))
    model = Stack([4, 8, 8], nnx.Rngs(0))
    with capture(model, keep="summary"):
        step(model, x)
    assert started == [True]  # while the step was traced
    started.clear()
    with watch(model, display=False) as w:
        step(model, x)
        step(model, x)
    assert started[0]  # while its step was traced
    assert all(s.size == 2 for s in w.stream.series.values())


def test_the_summary_program_of_a_new_table_size_compiles_in_the_background():

    model = Stack([5, 3000, 3000], nnx.Rngs(0))  # a table size no other test makes
    step = nnx.jit(lambda m, x: m(x))
    rows, _ = table_size([9 * 3000] * 2)
    assert not any(key[0][0] == rows for key in step_table._compiles)
    with watch(model, display=False) as w:
        step(model, jnp.ones((9, 5)))
    (key,) = [key for key in step_table._compiles if key[0][0] == rows]
    assert not step_table._compiles[key].is_alive()  # waited for before the summaries were made
    assert all(s.size == 1 for s in w.stream.series.values())


def test_a_first_quick_program_built_for_speed_is_replaced_by_its_optimized_build_once_used_again(
    tmp_path, monkeypatch
):
    """The unoptimized build serves the first result; the next process loads the optimized one."""
    import threading

    def builds_done():
        for thread in threading.enumerate():
            if thread.name.startswith("jaxcapture-"):
                thread.join()

    builds_done()  # earlier tests' builds would land in the tables made below
    monkeypatch.setenv("JAXCAPTURE_NB_CACHE_DIR", str(tmp_path))
    for name in ("_programs", "_compiles", "_unoptimized"):
        monkeypatch.setattr(step_table, name, {})
    model = Stack([4, 8, 8], nnx.Rngs(0))
    step = nnx.jit(lambda m, x: m(x))

    def captured():
        with capture(model, keep="summary") as cap:
            step(model, jnp.ones((2, 4)))
        builds_done()
        return [r.summary.stats for r in cap.records]

    first = captured()
    ((key, quick),) = step_table._programs.items()
    assert len(list(tmp_path.iterdir())) == 1  # the first result shares the processor with no build
    np.testing.assert_array_equal(captured(), first)
    assert not step_table._unoptimized  # the second use built the optimized program
    optimized = step_table._programs[key]
    assert optimized is not quick and len(list(tmp_path.iterdir())) == 2  # both builds kept
    np.testing.assert_array_equal(captured(), first)
    assert step_table._programs[key] is optimized
    # A new process (here: no program in memory) loads the optimized build and builds nothing.
    monkeypatch.setattr(step_table, "_programs", {})
    monkeypatch.setattr(step_table, "_compiles", {})
    np.testing.assert_array_equal(captured(), first)
    assert not step_table._unoptimized


@pytest.mark.parametrize(
    "odd",
    [
        None,
        np.array([1.0, np.nan], np.float32),
        np.array([np.inf, 2.0], np.float32),
        np.array([3e38, -3e38], np.float32),  # squares overflow
        np.array([1e-40, 0.0], np.float32),  # subnormal: flushed to zero on a CPU
    ],
    ids=["ordinary", "nan", "inf", "huge", "subnormal"],
)
def test_the_quick_program_marks_only_tables_that_need_the_careful_pass_and_agrees_on_the_rest(odd):
    arrays = [jnp.asarray(v) for v in VALUES if np.isfinite(v).all()]
    arrays.append(jnp.asarray(1000 + rng.normal(size=500).astype(np.float32)))  # ill-conditioned variance
    if odd is not None:
        arrays.append(jnp.asarray(odd))
    table, layout = padded_table(arrays), device_layout(tuple(a.size for a in arrays))
    # The quick program as a first capture compiles it, without LLVM's optimizations.
    quick_program = step_table.summary_program(table.shape, layout, table.dtype, 16, careful=False)
    quick = np.asarray(quick_program(table, layout))
    np.testing.assert_array_equal(quick, packed_rows(table, layout, bins=16, careful=False))
    careful = np.asarray(packed_rows(table, layout, bins=16))
    assert needs_careful(quick) == (odd is not None)
    if odd is None:
        np.testing.assert_array_equal(quick[: len(arrays)], careful[: len(arrays)])


def test_a_table_the_quick_program_marks_is_summarized_again_by_the_careful_one(tmp_path, monkeypatch):
    """A first capture compiles only the quick program; a NaN brings in the careful one, once."""

    monkeypatch.setenv("JAXCAPTURE_NB_CACHE_DIR", str(tmp_path))  # nothing kept from other runs
    monkeypatch.setattr(step_table, "_programs", {})
    monkeypatch.setattr(step_table, "_compiles", {})
    model = Stack([4, 8, 8], nnx.Rngs(0))
    step = nnx.jit(lambda m, x: m(x))

    def captured(x):
        with capture(model, keep="summary") as cap:
            step(model, x)
        return {r.name: r.summary for r in cap.records}

    def programs():
        return sorted(careful for *_, careful in step_table._programs)

    finite = captured(jnp.ones((2, 4)))
    assert programs() == [False]
    x = jnp.ones((2, 4)).at[0, 0].set(jnp.nan)
    with_nan = captured(x)
    assert programs() == [False, True]
    want = jnp.tanh(model.layers[0](x))
    assert (with_nan["h0"].nan_count, with_nan["h0"].count) == (
        int(jnp.isnan(want).sum()),
        int(jnp.isfinite(want).sum()),
    )
    assert with_nan["h0"].max == pytest.approx(float(jnp.nanmax(want)), rel=1e-6)
    # Once a process has the careful program, it summarizes every table: the same rows.
    again = captured(jnp.ones((2, 4)))
    for name, summary in finite.items():
        np.testing.assert_array_equal(again[name].stats, summary.stats)
        np.testing.assert_array_equal(again[name].counts, summary.counts)
