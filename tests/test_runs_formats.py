"""open_run() reads TensorFlow 2's form of histograms and scalars beside TensorFlow 1's; runs_in() lists runs."""

import pathlib
import struct
import time

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcapture_nb import JaxCaptureWarning, open_run, overlay_runs, summarize, watch
from jaxcapture_nb.runs.tensorboard.event_file import framed
from jaxcapture_nb.runs.tensorboard.folders import run_path, runs_in

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402

STATS = ("mean", "std", "min", "max", "zero_pct")


def tf2_buckets(values: np.ndarray, bucket_count: int = 30) -> np.ndarray:
    """The ``[k, 3]`` histogram ``tf.summary.histogram`` writes (TensorFlow 2.3 on), in NumPy.

    Equal buckets from the lowest value to the highest, the highest in the
    last; one value repeated has all its buckets at that value and its count
    in the last; no values give zeros.
    """
    values = np.asarray(values, np.float64).ravel()
    if values.size == 0:
        return np.zeros((bucket_count, 3))
    lo, hi = values.min(), values.max()
    counts = np.zeros(bucket_count)
    if lo == hi:
        counts[-1] = values.size
        return np.stack([np.full(bucket_count, hi), np.full(bucket_count, hi), counts], axis=1)
    index = np.minimum(np.floor((values - lo) / ((hi - lo) / bucket_count)).astype(int), bucket_count - 1)
    np.add.at(counts, index, 1)
    edges = np.linspace(lo, hi, bucket_count + 1)
    edges[-1] = hi
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def write_tf2(log_dir, summaries) -> None:
    """Writes ``(step, tag, plugin, array)`` summaries without TensorFlow.

    Each is a tensor tagged with its plugin (``None``: with no metadata):
    the form TensorFlow 2's tf.summary writes (Flax's examples write it
    through CLU's SummaryWriter).
    """
    writer = EventFileWriter(str(log_dir))
    for step, tag, plugin, array in summaries:
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(array))
        if plugin is not None:
            value.metadata.plugin_data.plugin_name = plugin
        summary = summary_pb2.Summary(value=[value])
        writer.add_event(event_pb2.Event(wall_time=1000.0 + step, step=step, summary=summary))
    writer.close()


def histogram(step, tag, values):
    return step, tag, "histograms", tf2_buckets(values)


def scalar(step, tag, value):
    return step, tag, "scalars", np.array(value, np.float32)


def rows(series):
    n = series.size
    return series.steps[:n], series.stats[:n], series.hists[:n]


def columns(series) -> dict[str, np.ndarray]:
    stats = rows(series)[1]
    return {name: stats[:, series.columns.index(name)] for name in (*STATS, "lo", "hi")}


SAMPLES = {step: np.random.default_rng(step).normal(step, 1.0 + step, size=1000) for step in range(0, 50, 10)}


def test_open_run_reads_tensorflow_2_histograms_and_scalars(tmp_path):
    write_tf2(
        tmp_path,
        [
            summary
            for step, values in SAMPLES.items()
            for summary in (
                histogram(step, "layer1/kernel", values),
                scalar(step, "train_loss", 1.0 / (step + 1)),
            )
        ],
    )
    stream = open_run(tmp_path).stream
    assert stream.bins == 30  # TensorFlow's own equal buckets, kept as they are
    assert [s.label for s in stream.series.values()] == ["layer1/kernel"]
    (series,) = stream.series.values()
    steps, _, hists = rows(series)
    assert steps.tolist() == list(SAMPLES)
    expected = np.stack([tf2_buckets(values)[:, 2] for values in SAMPLES.values()])
    np.testing.assert_array_equal(hists, expected)
    values = np.stack(list(SAMPLES.values()))
    column = columns(series)
    np.testing.assert_allclose(column["min"], values.min(1), rtol=1e-6)  # rows hold float32
    np.testing.assert_allclose(column["max"], values.max(1), rtol=1e-6)
    np.testing.assert_allclose(column["lo"], values.min(1), rtol=1e-6)
    np.testing.assert_allclose(column["hi"], values.max(1), rtol=1e-6)
    # The midpoints stand for each bucket's values: within a fraction of a bucket.
    width = (values.max(1) - values.min(1)) / 30
    np.testing.assert_allclose(column["mean"], values.mean(1), atol=0.05 * width.max())
    np.testing.assert_allclose(column["std"], values.std(1), rtol=0.02)
    assert np.isnan(column["zero_pct"]).all()
    assert list(stream.scalars) == ["train_loss"]
    loss_steps, loss, _ = rows(stream.scalars["train_loss"])
    assert loss_steps.tolist() == list(SAMPLES)
    np.testing.assert_allclose(loss[:, 0], [1.0 / (s + 1) for s in SAMPLES], rtol=1e-6)


def test_tensorflow_2_buckets_are_spread_onto_other_bins_with_every_count_kept(tmp_path):
    write_tf2(tmp_path, [histogram(step, "h", values) for step, values in SAMPLES.items()])
    (series,) = open_run(tmp_path, bins=64).stream.series.values()
    _, _, hists = rows(series)
    assert hists.shape == (5, 64) and (hists.sum(1) == 1000).all()
    # Spread evenly within each bucket: TensorFlow's first bucket over about
    # 64/30 bins, none of its count outside them.
    first = tf2_buckets(SAMPLES[0])[0, 2]
    assert hists[0, :2].sum() <= first <= hists[0, :3].sum()


def test_a_tensorflow_2_histogram_of_no_values_has_no_row_statistics(tmp_path):
    write_tf2(
        tmp_path,
        [
            histogram(0, "h", SAMPLES[0]),
            (1, "h", "histograms", np.zeros((0, 3))),  # TensorFlow before 2.3
            histogram(2, "h", []),  # TensorFlow 2.3 on: zeros
            histogram(3, "h", np.full(7, 2.5)),  # one value, repeated
        ],
    )
    (series,) = open_run(tmp_path).stream.series.values()
    steps, _, hists = rows(series)
    assert steps.tolist() == [0, 1, 2, 3]
    assert hists.sum(1).tolist() == [1000, 0, 0, 7]
    column = columns(series)
    assert np.isnan(column["mean"][1:3]).all() and np.isnan(column["max"][1:3]).all()
    assert (column["mean"][3], column["std"][3], column["min"][3], column["max"][3]) == (2.5, 0.0, 2.5, 2.5)


def test_a_log_of_both_forms_reads_as_one_run(tmp_path):
    """TensorFlow 1's histograms and scalars beside TensorFlow 2's; statistics named after a site in either."""
    with SummaryWriter(str(tmp_path)) as writer:
        for step, values in SAMPLES.items():
            writer.add_histogram("tf1/kernel", values, step)
            writer.add_scalar("tf1_loss", float(step), step)
            writer.add_scalar("tf2/kernel/zero_pct", 25.0, step)
    write_tf2(
        tmp_path,
        [
            summary
            for step, values in SAMPLES.items()
            for summary in (
                histogram(step, "tf2/kernel", values),
                scalar(step, "tf2_loss", 2.0 * step),
                scalar(step, "tf1/kernel/mean", 100.0 + step),
                (step, "notes", "text", np.array([b"a note"], dtype=object)),
                (step, "no_plugin", None, np.zeros(3)),
            )
        ],
    )
    stream = open_run(tmp_path, bins=32).stream
    assert sorted(s.label for s in stream.series.values()) == ["tf1/kernel", "tf2/kernel"]
    assert sorted(stream.scalars) == ["tf1_loss", "tf2_loss"]
    for tag, factor in (("tf1_loss", 1.0), ("tf2_loss", 2.0)):
        steps, values, _ = rows(stream.scalars[tag])
        assert steps.tolist() == list(SAMPLES)
        np.testing.assert_allclose(values[:, 0], [factor * s for s in SAMPLES])
    sites = {s.label: s for s in stream.series.values()}
    for series in sites.values():
        steps, _, hists = rows(series)
        assert steps.tolist() == list(SAMPLES) and (hists.sum(1) == 1000).all()
    np.testing.assert_array_equal(columns(sites["tf1/kernel"])["mean"], [100.0 + s for s in SAMPLES])
    assert np.isnan(columns(sites["tf1/kernel"])["zero_pct"]).all()
    np.testing.assert_allclose(columns(sites["tf2/kernel"])["zero_pct"], 25.0)


def write_scalar_run(log_dir) -> None:
    with SummaryWriter(str(log_dir)) as writer:
        writer.add_scalar("loss", 1.0, 0)


def test_runs_in_names_each_directory_of_event_files(tmp_path):
    for run in ("b", "a/lr-1", "a/lr-2/deep"):
        write_scalar_run(tmp_path / run)
    (tmp_path / "empty").mkdir()
    runs = runs_in(tmp_path)
    assert list(runs) == ["a/lr-1", "a/lr-2/deep", "b"]
    assert runs["a/lr-2/deep"] == tmp_path / "a" / "lr-2" / "deep"
    assert runs_in(tmp_path / "a") == {"lr-1": tmp_path / "a/lr-1", "lr-2/deep": tmp_path / "a/lr-2/deep"}
    assert list(open_run(runs["b"]).stream.scalars) == ["loss"]


def test_a_directory_of_event_files_is_one_run_named_by_itself(tmp_path):
    write_scalar_run(tmp_path / "adam")
    assert runs_in(tmp_path / "adam") == {"adam": tmp_path / "adam"}
    (event_file,) = (tmp_path / "adam").glob("*tfevents*")
    assert runs_in(event_file) == {event_file.name: event_file}
    # One run below a directory is the run that directory opens.
    write_scalar_run(tmp_path / "sgd" / "only")
    assert run_path(tmp_path / "sgd") == tmp_path / "sgd" / "only"


def test_runs_are_listed_as_tensorboard_lists_them(tmp_path):
    """Sub-folders beside a run's own files, linked folders, and names that only look like event files."""
    with SummaryWriter(str(tmp_path / "adam")) as writer:
        writer.add_scalar("loss", 1.0, 0)
        writer.add_scalars("lr", {"a": 0.1, "b": 0.2}, 0)  # a sub-folder per key
    assert list(runs_in(tmp_path / "adam")) == ["adam", "lr/a", "lr/b"]
    # A folder with event files of its own opens as that run, named by the
    # folder, as TensorBoard reads it; its sub-folders' runs open each by its path.
    opened = open_run(tmp_path / "adam")
    assert [run.name for run in opened.runs] == ["adam"] and list(opened.stream.scalars) == ["loss"]
    below = open_run(tmp_path / "adam" / "lr" / "a")
    assert [run.name for run in below.runs] == ["a"] and list(below.stream.scalars) == ["lr"]
    # overlay_runs, made for several runs, shows the three that TensorBoard lists.
    overlaid = overlay_runs(tmp_path / "adam")
    assert [run.name for run in overlaid.runs] == ["adam", "lr/a", "lr/b"]
    assert [list(run.stream.scalars) for run in overlaid.runs] == [["loss"], ["lr"], ["lr"]]
    (tmp_path / "only_below" / "x").mkdir(parents=True)
    write_scalar_run(tmp_path / "only_below" / "x" / "1")
    write_scalar_run(tmp_path / "only_below" / "x" / "2")
    with pytest.raises(ValueError, match=r"holds 2 runs \(x/1, x/2\)"):
        open_run(tmp_path / "only_below")
    # A linked folder is a run; a link back up is walked once.
    write_scalar_run(tmp_path / "elsewhere" / "sgd")
    (tmp_path / "adam" / "sgd").symlink_to(tmp_path / "elsewhere" / "sgd")
    (tmp_path / "adam" / "lr" / "a" / "up").symlink_to(tmp_path / "adam")
    assert list(runs_in(tmp_path / "adam")) == ["adam", "lr/a", "lr/b", "sgd"]
    # A link to nothing and a folder named like an event file hide nothing and break nothing.
    (tmp_path / "adam" / "sgd" / "events.out.tfevents.0.gone").symlink_to(tmp_path / "nowhere")
    (tmp_path / "adam" / "sgd" / "events.out.tfevents.folder").mkdir()
    assert list(open_run(tmp_path / "adam" / "sgd").stream.scalars) == ["loss"]
    (tmp_path / "notes.txt").write_text("not a log")
    with pytest.raises(FileNotFoundError, match=r"notes.txt is not a TensorBoard event file"):
        open_run(tmp_path / "notes.txt")


def test_runs_in_names_the_path_that_holds_none(tmp_path):
    (tmp_path / "logs" / "empty").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"no TensorBoard event file in .*logs"):
        runs_in(tmp_path / "logs")
    with pytest.raises(FileNotFoundError, match="missing"):
        runs_in(tmp_path / "missing")


def write_steps(log_dir, steps=20, tag="loss") -> pathlib.Path:
    """A run of one scalar a step, an event each; returns its event file."""
    with SummaryWriter(str(log_dir)) as writer:
        for step in range(steps):
            writer.add_scalar(tag, float(step), step)
    (path,) = pathlib.Path(log_dir).glob("*tfevents*")
    return path


def record_offsets(data: bytes) -> list[int]:
    """Where each record of an event file begins."""
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += 12 + struct.unpack_from("<Q", data, at)[0] + 4
    return offsets


def damaged(path, record, byte):
    """Flips the bits of a byte of the ``record``-th record (0 is the file's version); ``byte`` < 0 counts from its end."""
    data = bytearray(path.read_bytes())
    offsets = [*record_offsets(bytes(data)), len(data)]
    data[(offsets[record] if byte >= 0 else offsets[record + 1]) + byte] ^= 0xFF
    path.write_bytes(bytes(data))


def scalar_steps(log_dir, tag="loss"):
    return rows(open_run(log_dir).stream.scalars[tag])[0].tolist()


@pytest.mark.parametrize(
    "byte, problem",
    [(20, "fails its checksum"), (-2, "fails its checksum"), (3, "damaged \\(a record's length")],
    ids=["data", "data checksum", "length"],
)
def test_a_damaged_record_is_skipped_with_a_warning_and_the_rest_is_read(tmp_path, byte, problem):
    path = write_steps(tmp_path)
    damaged(path, 6, byte)  # record 6 holds step 5
    with pytest.warns(JaxCaptureWarning, match=rf"{path.name}: skipped what is damaged \(.*{problem}"):
        steps = scalar_steps(tmp_path)
    assert steps == [s for s in range(20) if s != 5]


def test_a_tag_that_is_not_utf8_skips_its_event_with_a_warning(tmp_path):
    path = write_steps(tmp_path, tag="lossX")
    data = path.read_bytes()
    offsets = record_offsets(data)
    at = offsets[4]
    body = bytearray(data[at + 12 : offsets[5] - 4])
    body[body.index(b"lossX") + 4] = 0xFF  # "loss" and a byte that is no UTF-8
    framed_again = framed(bytes(body))
    path.write_bytes(data[:at] + framed_again + data[offsets[5] :])
    with pytest.warns(JaxCaptureWarning, match=r"does not decode as an event"):
        steps = scalar_steps(tmp_path, tag="lossX")
    assert steps == [s for s in range(20) if s != 3]


def test_a_second_run_in_the_same_folder_is_shown_alone_and_said(tmp_path, monkeypatch):
    first = write_steps(tmp_path, steps=20)
    # A second, shorter run written later into the same folder.
    with SummaryWriter(str(tmp_path), filename_suffix=".second") as writer:
        for step in range(10):
            writer.add_scalar("loss", 100.0 + step, step)
    with pytest.warns(JaxCaptureWarning, match=r"holds 2 runs: the steps start again in .*Shown: the last"):
        stream = open_run(tmp_path).stream
    steps, values, _ = rows(stream.scalars["loss"])
    assert steps.tolist() == list(range(10)) and (values[:, 0] >= 100).all()  # none of the first run's
    assert scalar_steps(first) == list(range(20))  # the first, opened by its file
    # A run resumed in a new file goes on: one run, no warning.
    with SummaryWriter(str(tmp_path / "resumed")) as writer:
        writer.add_scalar("loss", 0.0, 0)
    with SummaryWriter(str(tmp_path / "resumed"), filename_suffix=".later") as writer:
        writer.add_scalar("loss", 1.0, 1)
    assert scalar_steps(tmp_path / "resumed") == [0, 1]


def test_two_watches_writing_one_folder_at_once_are_one_run_with_both_models_tags(tmp_path):
    """As TensorBoard shows such a folder; a tag both wrote is shown from one file alone, and said."""
    with watch(log_dir=tmp_path, display=False) as a, watch(log_dir=tmp_path, display=False) as b:
        for step in range(5):
            a.update(step, {"h": summarize(jnp.ones(4) * step), "only_a": summarize(jnp.ones(2))})
            a.log(step=step, loss_a=jnp.float32(step))
            b.update(step, {"h": summarize(-jnp.ones(4) * step)})
            b.log(step=step, loss_b=jnp.float32(10 + step))
    later = sorted(tmp_path.glob("*tfevents*"))[-1].name
    with pytest.warns(
        JaxCaptureWarning, match=rf"{later} was written while the file before it was .* both log 'h': shown"
    ):
        stream = open_run(tmp_path).stream
    assert sorted(stream.scalars) == ["loss_a", "loss_b"]
    assert rows(stream.scalars["loss_a"])[1][:, 0].tolist() == [0, 1, 2, 3, 4]
    assert rows(stream.scalars["loss_b"])[1][:, 0].tolist() == [10, 11, 12, 13, 14]
    series = {s.label: s for s in stream.series.values()}
    assert sorted(series) == ["h", "only_a"]
    h = series["h"]
    means = rows(h)[1][:, h.columns.index("mean")]
    assert means.tolist() == [0, -1, -2, -3, -4]  # one model's values, not the two mixed


def test_a_histogram_whose_count_disagrees_with_its_buckets_shows_no_mean(tmp_path):
    """One tool writes ``num`` as the number of edges: the sums then support no mean or spread."""
    histogram = summary_pb2.HistogramProto(
        min=0.0,
        max=4.0,
        num=5,
        sum=20.0,
        sum_squares=90.0,
        bucket_limit=[1.0, 2.0, 3.0, 4.0],
        bucket=[1, 2, 3, 4],
    )
    event = event_pb2.Event(
        step=0,
        wall_time=1.0,
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="w", histo=histogram)]),
    )
    (tmp_path / "events.out.tfevents.1.host").write_bytes(framed(event.SerializeToString()))
    series = next(iter(open_run(tmp_path).stream.series.values()))
    column = columns(series)
    assert np.isnan(column["mean"][0]) and np.isnan(column["std"][0])
    assert (column["min"][0], column["max"][0]) == (0.0, 4.0)


def test_a_reopened_run_counts_its_steps_and_rate_as_its_text_does(tmp_path):
    # Histograms for 117 steps, the loss for 120, one step every 0.1 s from the first value.
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(120):
            wall = 1000.0 + 0.1 * step
            if step < 117:
                writer.add_histogram("h", np.arange(8.0) + step, step, walltime=wall)
            writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=wall)
    view = open_run(tmp_path)
    progress = view._progress
    assert progress["seen"] == 120 and "120 steps seen" in repr(view)
    # The rate spans the first value to the last: no compile time in it.
    assert progress["rate"] == pytest.approx(119 / 11.9, rel=1e-3)
    # Each scalar keeps its wall time, which the view sends beside its step and value.
    loss = view.stream.scalars["loss"]
    np.testing.assert_allclose(loss.walls[: loss.size], 1000.0 + 0.1 * np.arange(120), rtol=0, atol=1e-3)
    triples = np.frombuffer(view._update["scalar_rows"], np.float64).reshape(-1, 3)
    np.testing.assert_allclose(triples[:, 2], loss.walls[: loss.size])


def test_the_live_rate_and_eta_leave_out_the_time_before_the_first_step(monkeypatch):

    from jaxcapture_nb.views import live_view

    now = [0.0]
    monkeypatch.setattr(live_view.time, "perf_counter", lambda: now[0])
    with watch(display=False, total=100) as w:
        now[0] = 30.0  # the first step compiles for 30 s
        for step in range(21):
            w.log(step=step, loss=1.0)
            w.stream.settle()
            w.view.publish()
            now[0] += 0.5  # then a step every 0.5 s
        progress = w.view._progress
        # 20 steps in 10 s after the first: 2 steps/s, 79 steps left.
        assert progress["seen"] == 21 and progress["rate"] == 2.0
        assert progress["eta"] == pytest.approx(79 / 2.0)
    # A logged scalar keeps the wall time it was logged at.
    loss = w.stream.scalars["loss"]
    assert np.all(np.diff(loss.walls[: loss.size]) >= 0) and abs(loss.walls[0] - time.time()) < 600


def test_a_logged_scalar_keeps_its_wall_time_in_the_log(tmp_path):

    with watch(log_dir=tmp_path, display=False) as w:
        for step in range(5):
            w.log(step=step, loss=float(step))
    live = w.stream.scalars["loss"]
    saved = open_run(tmp_path).stream.scalars["loss"]
    # The time each value was logged at, not the time the writer got to it.
    np.testing.assert_allclose(saved.walls[: saved.size], live.walls[: live.size], rtol=0, atol=1e-6)


def test_a_histogram_is_read_from_its_bytes_as_protobuf_reads_it_packed_or_not():
    from jaxcapture_nb.runs.tensorboard.reader import histogram_value

    proto = summary_pb2.HistogramProto(
        min=-2.0, max=3.0, num=6.0, sum=1.5, sum_squares=9.25, bucket_limit=[-2.0, 0.5, 3.0], bucket=[0, 4, 2]
    )
    # Packed, as every writer serializes the repeated fields; then one double
    # per field record, which protobuf also accepts and only it reads here.
    packed = proto.SerializeToString()
    scalars = b"".join(
        bytes([number << 3 | 1]) + struct.pack("<d", v) for number, v in enumerate([-2, 3, 6, 1.5, 9.25], 1)
    )
    unpacked = scalars + b"".join(
        bytes([number << 3 | 1]) + struct.pack("<d", v)
        for number, values in ((6, proto.bucket_limit), (7, proto.bucket))
        for v in values
    )
    assert summary_pb2.HistogramProto.FromString(unpacked) == proto
    for data in (packed, unpacked):
        h = histogram_value(data)
        assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (-2.0, 3.0, 6.0, 1.5, 9.25)
        assert h.bucket_limit.tolist() == [-2.0, 0.5, 3.0] and h.bucket.tolist() == [0.0, 4.0, 2.0]
