"""The bulk reader of event files reads what protobuf reads, value for value, whatever the events hold."""

import mmap
import pathlib

import numpy as np
import pytest

from jaxcapture_nb.runs.tensorboard.event_file import framed
from jaxcapture_nb.runs.tensorboard.event_scan import bodies, scan, scan_file
from jaxcapture_nb.runs.tensorboard.reader import _events, histogram_value, read_file, records, tags_of

pytest.importorskip("tensorboard")
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

Value = summary_pb2.Summary.Value


def event(step: int, *values, wall_time: float | None = None) -> bytes:
    summary = summary_pb2.Summary(value=list(values))
    return event_pb2.Event(
        wall_time=wall_time or 1000.0 + step, step=step, summary=summary
    ).SerializeToString()


def histo(tag: str, seed: int) -> Value:
    counts = np.random.default_rng(seed).integers(0, 9, 8).astype(float)
    proto = summary_pb2.HistogramProto(
        min=-1.0, max=1.0, num=counts.sum(), sum=0.5, sum_squares=2.0,
        bucket_limit=np.linspace(-1, 1, 9)[1:].tolist(), bucket=counts.tolist(),
    )  # fmt: skip
    return Value(tag=tag, histo=proto)


def tf2_scalar(tag: str, value: float, *, metadata: bool) -> Value:
    found = Value(tag=tag, tensor=tensor_util.make_tensor_proto(np.array(value, np.float32)))
    if metadata:
        found.metadata.plugin_data.plugin_name = "scalars"
    return found


def every_kind_of_event() -> list[bytes]:
    """Events of every layout: the writers' own, and those left to protobuf."""
    long_tag = "model/blocks.11.attention/query_projection/mean"  # of several 8-byte words
    found = [event_pb2.Event(wall_time=999.0, file_version="brain.Event:2").SerializeToString()]
    for step in (0, 1, 300, 2**30):  # steps of one to five bytes
        found.append(event(step, Value(tag="loss", simple_value=1.0 / (step + 1))))
    found.append(event(2, Value(tag="loss", simple_value=0.0)))  # a zero, which protobuf writes
    for step in (5, 10):
        found.append(
            event(
                step,
                histo("blocks.10.residual", step),
                Value(tag="blocks.10.residual/mean", simple_value=0.25 * step),
                histo("blocks.11.residual", step + 1),  # one letter apart from the other site
                Value(tag=long_tag, simple_value=-2.5),
                Value(tag="λ/loss", simple_value=3.0),  # not ASCII
            )
        )
    found.append(event(2**40, Value(tag="loss", simple_value=9.0)))  # six bytes: left to protobuf
    found.append(event(-1, Value(tag="loss", simple_value=8.0)))  # ten bytes: left to protobuf
    found.append(event(11, Value(tag="loss", node_name="n", simple_value=7.0)))  # another field
    found.append(event(12, tf2_scalar("tf2", 1.5, metadata=True)))  # a tensor, tagged with its plugin
    found.append(event(13, tf2_scalar("tf2", 2.5, metadata=False)))  # later values are not tagged
    found.append(event(14, Value(tag="picture", image=summary_pb2.Summary.Image(height=1, width=1))))
    found.append(event(15, wall_time=1015.0))  # no value
    not_utf8 = event(16, Value(tag="loss", simple_value=6.0)).replace(b"loss", b"l\xffss")
    found.append(not_utf8)
    found.append(event(17, Value(tag="loss", simple_value=5.0)))
    return found


def careful(data: bytes, problems: list[str]):
    return tags_of(_events(records(data, problems), problems))


def assert_same(a, b) -> None:
    assert list(a.histograms) == list(b.histograms)
    assert list(a.scalars) == list(b.scalars)
    for tag in a.scalars:
        for field in ("steps", "values", "walls"):
            assert np.array_equal(getattr(a.scalars[tag], field), getattr(b.scalars[tag], field)), (
                tag,
                field,
            )
    for tag in a.histograms:
        assert np.array_equal(a.histograms[tag].steps, b.histograms[tag].steps)
        assert np.array_equal(a.histograms[tag].walls, b.histograms[tag].walls)
        for x, y in zip(a.histograms[tag].values, b.histograms[tag].values, strict=True):
            assert histogram_value(x)._replace(bucket_limit=0, bucket=0) == histogram_value(y)._replace(
                bucket_limit=0, bucket=0
            )
            assert np.array_equal(histogram_value(x).bucket, histogram_value(y).bucket)
    assert a.wall_times == b.wall_times


def test_the_bulk_reader_reads_every_layout_as_protobuf_does(tmp_path: pathlib.Path) -> None:
    data = b"".join(map(framed, every_kind_of_event()))
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(data)
    problems, expected_problems = [], []
    found = read_file(path, problems)
    assert_same(found, careful(data, expected_problems))
    assert problems == expected_problems and len(problems) == 1 and "does not decode" in problems[0]
    loss = found.scalars["loss"]
    # File order, across events read in bulk and by protobuf.
    assert loss.steps.tolist() == [0, 1, 300, 2**30, 2, 2**40, -1, 11, 17]
    assert found.scalars["tf2"].values.tolist() == [1.5, 2.5]
    assert "picture" not in found.scalars and "picture" not in found.histograms
    assert list(found.histograms) == ["blocks.10.residual", "blocks.11.residual"]
    # Only the events laid out otherwise went to protobuf: the file's version,
    # the steps of six and ten bytes, the other field, the tensors, the image
    # and the tag that is not UTF-8.
    events, _ = bodies(data)
    assert scan(data, events).others.starts.tolist() == events.starts[[0, 8, 9, 10, 11, 12, 13, 15]].tolist()


def test_a_file_still_being_written_is_read_to_its_last_whole_record(tmp_path: pathlib.Path) -> None:
    data = b"".join(map(framed, every_kind_of_event()[:6]))
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(data + framed(event(20, Value(tag="loss", simple_value=1.0)))[:-3])
    problems: list[str] = []
    assert_same(read_file(path, problems), careful(data, []))
    assert problems == []


def test_a_damaged_file_is_read_past_the_damage_as_protobuf_reads_it(tmp_path: pathlib.Path) -> None:
    parts = list(map(framed, every_kind_of_event()))
    damaged = bytearray(parts[3])
    damaged[20] ^= 0xFF  # in the data: its checksum fails
    data = b"".join([*parts[:3], bytes(damaged), *parts[4:]])
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(data)
    problems, expected = [], []
    assert_same(read_file(path, problems), careful(data, expected))
    assert problems == expected and any("fails its checksum" in p for p in problems)


def test_a_file_read_a_window_at_a_time_reads_the_same(tmp_path: pathlib.Path) -> None:
    data = b"".join(map(framed, every_kind_of_event() * 40))  # about 30 pages
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(data)
    with open(path, "rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    whole, windows = scan_file(data), scan_file(mapped, window=3 * mmap.PAGESIZE)
    assert whole is not None and windows is not None
    assert windows.tags == whole.tags
    for kind in ("scalars", "histograms"):
        a, b = getattr(whole, kind), getattr(windows, kind)
        for field in ("at", "tags", "steps", "walls"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), (kind, field)
    assert np.array_equal(whole.scalars.values, windows.scalars.values)
    assert [bytes(v) for v in whole.histograms.values] == [bytes(v) for v in windows.histograms.values]
    assert np.array_equal(whole.others.starts, windows.others.starts)
