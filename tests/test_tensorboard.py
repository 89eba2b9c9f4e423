"""watch(log_dir=...) writes TensorBoard event files; open_run() shows a saved log again."""

import math
import os
import pathlib
import queue
import re
import struct
import subprocess
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from models import PerturbedMLP
from training import watched_training

from jaxcapture_nb import JaxCaptureWarning, open_run, summarize, watch
from jaxcapture_nb.runs.saved import even_counts
from jaxcapture_nb.runs.tensorboard.writer import LogWriter, histogram_edges, site_tag

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402
from tensorboardX.proto.event_pb2 import Event  # noqa: E402
from tensorboardX.record_writer import masked_crc32c  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("tensorboard_worker.py")
STATS = ("mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf")


def train(log_dir, steps=12, **options):
    """A watched adam loop that logs its loss; returns the Watch."""
    x = jax.random.normal(jax.random.key(1), (8, 4))
    y = jnp.ones((8, 1))
    return watched_training(
        PerturbedMLP(nnx.Rngs(0)), optax.adam(1e-2), x, y, steps=steps, log_dir=log_dir, **options
    )


def accumulate(path):
    everything = {event_accumulator.HISTOGRAMS: 0, event_accumulator.SCALARS: 0}
    return event_accumulator.EventAccumulator(str(path), size_guidance=everything).Reload()


def rows(series):
    n = series.size
    return series.steps[:n], series.stats[:n], series.hists[:n]


def test_the_log_holds_what_the_stream_recorded(tmp_path):
    w = train(tmp_path, steps=12, every=3, grads=True)
    log = accumulate(tmp_path)
    assert set(log.Tags()["histograms"]) == {"act", "h (activation)", "h (gradient)"}
    for series in w.stream.series.values():
        steps, stats, hists = rows(series)
        assert steps.tolist() == [0, 3, 6, 9]
        column = {name: stats[:, series.columns.index(name)] for name in (*STATS, "lo", "hi")}
        events = log.Histograms(site_tag(series))
        assert [e.step for e in events] == steps.tolist()
        for k, event in enumerate(events):
            h = event.histogram_value
            # An empty bucket ending at lo, then the row's own buckets, exactly.
            assert h.bucket == [0.0, *hists[k].astype(float)]
            assert h.bucket_limit == histogram_edges(column["lo"][k], column["hi"][k], series.bins).tolist()
            assert (h.min, h.max, h.num) == (column["lo"][k], column["hi"][k], hists[k].sum())
        for name in STATS:
            logged = [e.value for e in log.Scalars(f"{site_tag(series)}/{name}")]
            np.testing.assert_array_equal(np.float32(logged), column[name])
    loss = w.stream.scalars["loss"]
    assert [(e.step, np.float32(e.value)) for e in log.Scalars("loss")] == [
        (int(s), v[loss.columns.index("mean")]) for s, v in zip(*rows(loss)[:2], strict=True)
    ]


def test_the_log_keeps_every_recorded_step_the_view_thinned(tmp_path):
    w = train(tmp_path, steps=20, keep_steps=4)
    series = w.stream.series[next(iter(w.stream.series))]
    steps, _, hists = rows(series)
    assert len(steps) <= 4
    events = accumulate(tmp_path).Histograms(site_tag(series))
    assert [e.step for e in events] == list(range(20))
    for step, hist in zip(steps, hists, strict=True):
        assert events[step].histogram_value.bucket[1:] == hist.astype(float).tolist()


def test_a_log_takes_each_step_of_a_table_at_once_and_leaves_the_stream_its_fast_path(tmp_path, monkeypatch):
    """A writer gets a step's rows of a compiled call together; the sites keep their rows in one block."""
    calls = []
    add_rows = LogWriter.add_rows

    def counted(self, series, step, stats, hists):
        calls.append((tuple(s.label for s in series), step, stats.shape))
        add_rows(self, series, step, stats, hists)

    monkeypatch.setattr(LogWriter, "add_rows", counted)
    w = train(tmp_path, steps=5)
    tables = list(w.stream._tables.values())
    assert tables and all(t.block is not None and t.block.intact() for t in tables)
    site_calls = [c for c in calls if c[0] != ("loss",)]
    labels = tuple(sorted(s.label for s in w.stream.series.values()))
    assert [(tuple(sorted(names)), step) for names, step, _ in site_calls] == [(labels, s) for s in range(5)]
    assert all(shape[0] == len(labels) for *_, shape in site_calls)
    assert len(accumulate(tmp_path).Histograms("act")) == 5


def test_tensorboards_data_layer_sees_the_run(tmp_path):
    """What `tensorboard --logdir` serves: its histogram buckets are the row's, exactly."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer

    w = train(tmp_path / "adam", steps=4)
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(tmp_path))
    ctx = context.RequestContext()
    assert [run.run_name for run in provider.list_runs(ctx, experiment_id="")] == ["adam"]
    histograms = provider.read_tensors(ctx, experiment_id="", plugin_name="histograms", downsample=100)
    assert set(histograms["adam"]) == {"act"}
    series = w.stream.series[next(iter(w.stream.series))]
    steps, stats, hists = rows(series)
    lo, hi = stats[-1, series.columns.index("lo")], stats[-1, series.columns.index("hi")]
    buckets = histograms["adam"][site_tag(series)][-1]
    assert buckets.step == steps[-1]
    np.testing.assert_array_equal(buckets.numpy[:, 2], hists[-1])
    edges = histogram_edges(lo, hi, series.bins)
    np.testing.assert_allclose(buckets.numpy[:, 0], edges[:-1], rtol=1e-6)
    np.testing.assert_allclose(buckets.numpy[:, 1], edges[1:], rtol=1e-6)
    scalars = provider.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=100)
    assert [point.step for point in scalars["adam"]["loss"]] == [0, 1, 2, 3]


def test_open_run_shows_the_run_as_it_was_recorded(tmp_path):
    w = train(tmp_path, steps=9, every=2, grads=True)
    view = open_run(tmp_path)
    original, opened = list(w.stream.series.values()), list(view.stream.series.values())
    assert [(s.label, s.kind) for s in opened] == [(s.label, s.kind) for s in original]
    for before, after in zip(original, opened, strict=True):
        for a, b in zip(rows(before), rows(after), strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rows(view.stream.scalars["loss"])[1], rows(w.stream.scalars["loss"])[1])
    assert view.stream.steps_seen == 9
    assert view._progress["done"] and view._progress["recorded"] == 5


def test_open_run_finds_the_first_nan_and_inf(tmp_path):
    """Values handed to w.update, one of them with a NaN from step 3 on and an Inf at step 5."""
    with watch(log_dir=tmp_path, display=False) as w:
        for step in range(8):
            bad = jnp.arange(6.0).at[0].set(jnp.nan if step >= 3 else 0.0)
            bad = bad.at[1].set(jnp.inf if step == 5 else 1.0)
            w.update(step, {"good": summarize(jnp.ones(4) * step), "bad": summarize(bad)})
    assert w.stream.first_nonfinite == ("bad", 3)
    stream = open_run(tmp_path).stream
    assert stream.first_nonfinite == ("bad", 3)
    bad = next(s for s in stream.series.values() if s.label == "bad")
    _, stats, _ = rows(bad)
    assert stats[:, bad.columns.index("nan")].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert stats[:, bad.columns.index("posinf")].tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    for before, after in zip(w.stream.series.values(), stream.series.values(), strict=True):
        np.testing.assert_array_equal(rows(before)[1], rows(after)[1])


def test_a_long_log_opens_thinned_as_the_live_view_thinned_it(tmp_path):
    """Only the rows the history keeps are made; they equal the live view's, and the first NaN is found between them."""
    with watch(log_dir=tmp_path, display=False, keep_steps=4) as w:
        for step in range(23):
            value = jnp.arange(6.0) * step
            w.update(step, {"h": summarize(value.at[0].set(jnp.nan) if step == 5 else value)})
            w.log(step=step, loss=jnp.float32(step) if step != 7 else jnp.float32(jnp.inf))
    stream = open_run(tmp_path, keep_steps=4).stream
    for before, after in [
        (next(iter(w.stream.series.values())), next(iter(stream.series.values()))),
        (w.stream.scalars["loss"], stream.scalars["loss"]),
    ]:
        assert rows(after)[0].tolist() == rows(before)[0].tolist() and 5 not in rows(after)[0].tolist()
        for a, b in zip(rows(before), rows(after), strict=True):
            np.testing.assert_array_equal(a, b)
    assert stream.steps_seen == w.stream.steps_seen == 23
    assert stream.first_nonfinite == w.stream.first_nonfinite == ("h", 5)


def test_open_run_reads_a_tensorboardx_log(tmp_path):
    """Uneven buckets of another tool are spread onto equal bins; the sums give the statistics."""
    rng = np.random.default_rng(0)
    samples = {step: rng.normal(step, 1.0 + step, size=1000) for step in range(0, 50, 10)}
    with SummaryWriter(str(tmp_path)) as writer:
        for step, values in samples.items():
            writer.add_histogram("layer1/weights", values, step)  # TensorFlow's exponential buckets
            writer.add_histogram("layer1/even", values, step, bins=16)
            writer.add_scalar("train/loss", 1.0 / (step + 1), step)
    stream = open_run(tmp_path, bins=32).stream
    assert [s.label for s in stream.series.values()] == ["layer1/weights", "layer1/even"]
    assert list(stream.scalars) == ["train/loss"]
    np.testing.assert_allclose(
        rows(stream.scalars["train/loss"])[1][:, 0], [1.0 / (s + 1) for s in samples], rtol=1e-6
    )
    for series in stream.series.values():
        steps, stats, hists = rows(series)
        assert steps.tolist() == list(samples)
        column = {name: stats[:, series.columns.index(name)] for name in (*STATS, "lo", "hi")}
        values = np.stack(list(samples.values()))
        assert hists.shape == (5, 32) and (hists.sum(1) == 1000).all()
        np.testing.assert_allclose(column["mean"], values.mean(1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(column["std"], values.std(1), rtol=1e-4)
        np.testing.assert_allclose(column["min"], values.min(1), rtol=1e-6)
        np.testing.assert_allclose(column["max"], values.max(1), rtol=1e-6)
        assert np.isnan(column["zero_pct"]).all()
        # The median of the spread bins lies near the values' own.
        median = stats[:, series.columns.index("p50")]
        np.testing.assert_allclose(median, np.median(values, 1), atol=0.25 * values.std(1).max())


def test_even_counts_spreads_uneven_buckets_and_keeps_even_ones():
    # watch()'s own: an empty bucket of no width, then equal ones, kept exactly.
    edges = histogram_edges(-1.0, 3.0, 4).tolist()
    assert even_counts(-1.0, 3.0, edges, [0, 5, 0, 2, 7], 4)[2].tolist() == [5, 0, 2, 7]
    # Uneven: spread evenly within each bucket, the total kept.
    lo, hi, hist = even_counts(0.0, 8.0, [0.0, 1.0, 8.0], [0, 3, 7], 8)
    assert (lo, hi) == (0.0, 8.0) and hist.tolist() == [3, 1, 1, 1, 1, 1, 1, 1]
    # One value, many times: a bar around it.
    lo, hi, hist = even_counts(2.0, 2.0, [2.0, 2.0], [0, 9], 4)
    assert lo < 2.0 < hi and hist.tolist() == [0, 0, 9, 0]


def test_open_run_says_what_a_path_holds(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TensorBoard event file"):
        open_run(tmp_path)
    for run in ("a", "b"):
        with SummaryWriter(str(tmp_path / run)) as writer:
            writer.add_scalar("loss", 1.0, 0)
    with pytest.raises(ValueError, match=r"2 runs \(a, b\)"):
        open_run(tmp_path)
    assert list(open_run(tmp_path / "a").stream.scalars) == ["loss"]


def whole_records(path):
    """The steps of each tag in an event file, checking that every record is whole and its checksums right."""
    data, steps, at = path.read_bytes(), {}, 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        assert struct.unpack_from("<I", data, at + 8)[0] == masked_crc32c(data[at : at + 8])
        record = data[at + 12 : at + 12 + length]
        assert len(record) == length
        assert struct.unpack_from("<I", data, at + 12 + length)[0] == masked_crc32c(record)
        event = Event.FromString(record)
        for value in event.summary.value:
            steps.setdefault(value.tag, []).append(event.step)
        at += 12 + length + 4
    return steps


def fill(folder, leave=0):
    """Fills the filesystem of ``folder`` but ``leave`` bytes."""
    stats = os.statvfs(folder)
    (folder / "filler").write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - leave))


def test_a_disk_that_fills_during_a_run_ends_the_log_not_the_training(small_disk):
    disk = small_disk("1m")
    fill(disk, leave=16 * 1024)
    with pytest.warns(
        JaxCaptureWarning, match=r"stopped at step \d+: No space left on device.*Free space"
    ) as warned:
        w = train(disk / "run", steps=40)
    assert len([x for x in warned if issubclass(x.category, JaxCaptureWarning)]) == 1  # told once
    assert [rows(s)[0].tolist() for s in w.stream.series.values()] == [list(range(40))]  # training went on
    (path,) = (disk / "run").iterdir()
    stopped = int(re.search(r"stopped at step (\d+)", str(warned[0].message)).group(1))
    assert 0 < stopped < 39 and str(path) in str(warned[0].message)
    # Every record in the file is whole, TensorBoard reads them all, and
    # each tag holds its first steps, none missing: all written before the failure.
    written = whole_records(path)
    log = accumulate(path)
    assert written["act"] == [e.step for e in log.Histograms("act")] == list(range(len(written["act"])))
    assert written["loss"] == [e.step for e in log.Scalars("loss")] == list(range(len(written["loss"])))
    assert stopped in (len(written["act"]), len(written["loss"])) and len(written["act"]) < 40


def test_a_disk_full_before_the_run_warns_and_the_training_goes_on(small_disk):
    disk = small_disk("64k")
    (disk / "run").mkdir()
    fill(disk)
    with pytest.warns(JaxCaptureWarning, match=r"stopped at step 0: No space left on device"):
        w = train(disk / "run", steps=3)
    assert [rows(s)[0].tolist() for s in w.stream.series.values()] == [[0, 1, 2]]
    (path,) = (disk / "run").iterdir()
    assert path.stat().st_size == 0  # nothing half-written


def test_two_watches_started_in_the_same_second_keep_a_file_each(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.25)
    train(tmp_path, steps=3)
    train(tmp_path, steps=5)
    first, second = sorted(tmp_path.iterdir(), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    assert first.name.startswith("events.out.tfevents.1800000000.")
    assert whole_records(first)["loss"] == [0, 1, 2] and whole_records(second)["loss"] == list(range(5))
    # Two open at once, in one folder, write apart.
    a, b = LogWriter(tmp_path / "both"), LogWriter(tmp_path / "both")
    assert a.path != b.path
    a.close()
    b.close()


def test_only_process_zero_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    w = train(tmp_path / "run", steps=2)
    assert w.stream.series and not (tmp_path / "run").exists()


def test_log_dir_without_tensorboardx_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"pip install tensorboardX tensorboard crc32c"):
        watch(log_dir=tmp_path)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"pip install tensorboardX tensorboard crc32c"):
        open_run(tmp_path)


def test_the_package_imports_without_tensorboard():
    blocked = "import sys; sys.modules['tensorboardX'] = sys.modules['tensorboard'] = None"
    probe = "import jaxcapture_nb; jaxcapture_nb.watch(display=False); print('imported')"
    done = subprocess.run(
        [sys.executable, "-c", f"{blocked}; {probe}"], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip() == "imported", done.stderr


def test_rows_reach_the_disk_within_seconds_while_the_run_goes_on(tmp_path):
    """The writer flushes by itself, again and again: a killed run loses only its last seconds."""
    model = PerturbedMLP(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (8, 4))
    forward = nnx.jit(lambda model, x: model(x))

    def on_disk(tag):
        log = accumulate(tmp_path)
        return [e.step for e in log.Histograms(tag)] if tag in log.Tags()["histograms"] else []

    def on_disk_within(seconds, steps):
        deadline = time.monotonic() + seconds
        while on_disk("act") != steps:
            assert time.monotonic() < deadline, f"steps {steps} were not on disk within {seconds} s"
            time.sleep(0.1)  # polls the file

    with watch(model, log_dir=tmp_path, display=False, steps="calls"):
        # The first rows are flushed as they come, the later ones within seconds.
        for batch in range(3):
            for _ in range(2):
                jax.block_until_ready(forward(model, x))
            on_disk_within(8.0, list(range(2 * batch + 2)))


# The worker takes this long a step, or longer on a busy machine; the test
# lets it run this long after its first step, then kills it.
STEP_SECONDS = 0.05
RUN_SECONDS = 16.0
# Every step recorded this long before the kill must be in the log.
SAFE_SECONDS = 10.0


def test_a_killed_run_keeps_every_step_recorded_ten_seconds_before(tmp_path):
    log_dir = tmp_path / "run"
    stderr = (tmp_path / "stderr.txt").open("w")
    process = subprocess.Popen(
        [sys.executable, str(WORKER), str(log_dir), "600", str(STEP_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    lines: queue.Queue = queue.Queue()

    def read():
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    recorded: dict[int, float] = {}
    try:
        deadline = time.monotonic() + 300  # JAX's import and the first compile, on a busy machine
        while True:
            line = lines.get(timeout=max(deadline - time.monotonic(), 1.0))
            assert line is not None, (tmp_path / "stderr.txt").read_text()
            _, step, at = line.split()
            recorded[int(step)] = float(at)
            if float(at) - min(recorded.values()) >= RUN_SECONDS:
                break
        killed_at = time.time()
        process.kill()  # SIGKILL: no exit handler runs
        assert process.wait(timeout=60) == -9
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)
        stderr.close()
    old = sorted(step for step, at in recorded.items() if at < killed_at - SAFE_SECONDS)
    assert len(old) >= 5 and old == list(range(len(old)))
    log = accumulate(log_dir)
    assert {e.step for e in log.Histograms("act")} >= set(old)
    assert {e.step for e in log.Scalars("loss")} >= set(old)
    assert {e.step for e in log.Scalars("act/mean")} >= set(old)
    # The log of a killed run opens as any other.
    assert math.isfinite(rows(open_run(log_dir).stream.scalars["loss"])[1][0, 0])
