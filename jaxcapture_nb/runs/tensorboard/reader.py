"""Reading a run's TensorBoard event files as TensorBoard serves them: every whole record, past damaged ones.

An event file is a sequence of TFRecords (see :mod:`~jaxcapture_nb.runs.tensorboard.event_file`).
TensorBoard's Python reader stops at the first record that fails its
checksum, and a file whose bytes cannot be decoded raises; its server's
default loader skips such a record and serves the rest. So does this
reader, and a warning says what it skipped: a record whose data fails its
checksum or does not decode (a tag that is not UTF-8, say) is left out; a
damaged length loses the way to the next record, which is found again by
its checksummed length. A last record cut short is a file still being
written, or one whose writer was killed: it is left for later, silently,
as TensorBoard does.

The files are memory-mapped and read a window at a time, so a large log
is never held in memory whole: what is held is the values read from it,
each scalar as a float and each histogram as a view of its bytes in the
file, until the rows of a view are made from them; only the histograms
those rows keep are decoded.
"""

from __future__ import annotations

import math
import mmap
import os
import pathlib
import struct
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from jaxcapture_nb.runs.tensorboard import event_scan
from jaxcapture_nb.runs.tensorboard.event_file import FOOTER, HEADER, masked_crc
from jaxcapture_nb.runs.tensorboard.event_scan import Scanned
from jaxcapture_nb.runs.tensorboard.tags import HistogramValue, Tags, TagValues


class FileReport(NamedTuple):
    """What reading one event file found wrong, as sentences; empty if nothing."""

    path: pathlib.Path
    problems: list[str]


def records(data: bytes | mmap.mmap, problems: list[str]) -> Iterator[tuple[int, bytes]]:
    """Where each whole record of an event file's bytes begins, and its data, in order; what is skipped goes to ``problems``.

    Example:
      >>> from jaxcapture_nb.runs.tensorboard.event_file import framed
      >>> good, bad = framed(b"first"), bytearray(framed(b"second"))
      >>> bad[14] ^= 1  # a flipped bit in the data
      >>> problems = []
      >>> list(records(good + bytes(bad) + framed(b"third") + good[:5], problems))
      [(0, b'first'), (43, b'third')]
      >>> problems
      ['the record at byte 21 fails its checksum']
    """
    at, size = 0, len(data)
    while at + HEADER <= size:
        header = bytes(data[at : at + 8])
        if struct.unpack_from("<I", data, at + 8)[0] != masked_crc(header):
            found = _next_record(data, at + 1)
            problems.append(f"bytes {at} to {found} are damaged (a record's length fails its checksum)")
            at = found
            continue
        (length,) = struct.unpack_from("<Q", data, at)
        end = at + HEADER + length + FOOTER
        if end > size:
            return  # cut short: still being written, or its writer was killed
        body = bytes(data[at + HEADER : end - FOOTER])
        if struct.unpack_from("<I", data, end - FOOTER)[0] != masked_crc(body):
            problems.append(f"the record at byte {at} fails its checksum")
        else:
            yield at, body
        at = end


def _next_record(data: bytes | mmap.mmap, start: int) -> int:
    """Where the next record whose length passes its checksum begins at or after ``start``; else the end."""
    for at in range(start, len(data) - HEADER + 1):
        if struct.unpack_from("<I", data, at + 8)[0] == masked_crc(bytes(data[at : at + 8])):
            return at
    return len(data)


def read_file(path: pathlib.Path, problems: list[str], keep: int | None = None) -> Tags:
    """The histograms and scalars of one event file; what is skipped goes to ``problems``.

    The events are read in bulk (:mod:`~jaxcapture_nb.runs.tensorboard.event_scan`), and
    those laid out in an unusual way one by one by protobuf; a file with a
    damaged record is read a record at a time, past the damage. With
    ``keep``, the values read in bulk are thinned as they are read to those
    a view of ``keep`` rows per tag may keep (:meth:`TagValues.kept` finds
    them), unless protobuf read some values of the same tags.
    """
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return tags_of(iter(()))
        # Not closed here: the histograms read in bulk are views of it, and
        # it is unmapped once the last of them is let go.
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    scanned = event_scan.scan_file(data, keep=keep)
    if scanned is None:
        return tags_of(_events(records(data, problems), problems))
    starts, ends = scanned.others
    others = list(
        _events(
            ((a - HEADER, data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)), problems
        )
    )
    if scanned.thinned and {v.tag for _, event in others for v in event.summary.value} & set(scanned.tags):
        scanned = event_scan.scan_file(data)  # their places among each other are not known: read it whole
    assert scanned is not None  # it was read once already
    return tags_of(iter(others), scanned)


def _events(bodies: Iterator[tuple[int, bytes]], problems: list[str]) -> Iterator[tuple[int, Any]]:
    """Each record's place in its file and its ``Event``; a record that does not decode goes to ``problems``."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    for at, body in bodies:
        try:
            yield at, Event.FromString(body)
        except DecodeError as error:
            problems.append(f"the record at byte {at} does not decode as an event ({error})")


def problems_text(report: FileReport) -> str:
    """One sentence of what was skipped in a file, for a warning.

    Example:
      >>> problems_text(FileReport(pathlib.Path("run/events.out.tfevents.1"), ["the record at byte 21 fails its checksum"]))
      'run/events.out.tfevents.1: skipped what is damaged (the record at byte 21 fails its checksum) and read the rest'
    """
    shown = "; ".join(report.problems[:3])
    more = f"; and {len(report.problems) - 3} more" if len(report.problems) > 3 else ""
    return f"{report.path}: skipped what is damaged ({shown}{more}) and read the rest"


def tags_of(events: Iterator[tuple[int, Any]], scanned: Scanned | None = None) -> Tags:
    """The histograms and scalars of ``events`` and of the values ``scanned``, TensorFlow 2's tensors as TensorFlow 1's values.

    ``events`` are ``Event`` s with their places in the file, which order
    their values among those ``scanned`` in bulk. A tensor belongs to the
    plugin its tag's metadata names, which TensorFlow writes with the tag's
    first value only; tensors of other plugins (images, text) are left out.
    """
    # Each tag's (place, step, value, wall time): one append per value, as
    # this loop may run once for every value of a long log.
    histograms: dict[str, list[tuple[int, int, Any, float]]] = {}
    scalars: dict[str, list[tuple[int, int, Any, float]]] = {}
    plugins: dict[str, str] = {}
    walls: list[float] = []
    restarted_at = None
    for at, event in events:
        values = event.summary.value
        if not values:
            if event.HasField("session_log") and event.session_log.status == event.session_log.START:
                restarted_at = event.step
            continue
        step, wall_time = event.step, event.wall_time
        walls.append(wall_time)
        for k, value in enumerate(values):
            # A value that is not a scalar reads as a scalar of zero, so only
            # a zero asks which kind of value it is.
            tag, found = value.tag, value.simple_value
            kind = "simple_value" if found else value.WhichOneof("value")
            if kind == "simple_value":
                table = scalars
            elif kind == "histo":
                table, found = histograms, value.histo.SerializeToString()
            elif kind == "tensor":
                if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                    plugins.setdefault(tag, value.metadata.plugin_data.plugin_name)
                plugin = plugins.get(tag)
                if plugin == "histograms":
                    table, found = histograms, _tensor_histogram(value.tensor)
                elif plugin == "scalars":
                    table, found = scalars, float(_array(value.tensor).item())
                else:
                    continue
            else:
                continue
            # The event's values lie after its place and before the next event's.
            table.setdefault(tag, []).append((at + k, step, found, wall_time))
    if scanned is not None:
        walls += (scanned.wall_times.min(initial=math.inf), scanned.wall_times.max(initial=-math.inf))
    first, last = float(min(walls, default=math.inf)), float(max(walls, default=-math.inf))
    return Tags(
        _by_tag(histograms, scanned, False, list),
        _by_tag(scalars, scanned, True, lambda values: np.array(values, np.float64)),
        (first, last) if first <= last else None,
        restarted_at,
    )


_Columns = tuple[np.ndarray, np.ndarray, Any, np.ndarray]  # places, steps, values, wall times


def _by_tag(
    read: dict[str, list[tuple[int, int, Any, float]]],
    scanned: Scanned | None,
    of_scalars: bool,
    values_as: Callable[[Any], Any],
) -> dict[str, TagValues]:
    """Each tag's values of one kind, those ``read`` one by one and those ``scanned`` together, in file order; tags in order of their first value.

    A tag ``scanned`` thinned has no value ``read``: :func:`read_file`
    reads the file again whole where it would.
    """
    columns: dict[str, _Columns] = {}
    thinned: dict[str, tuple[Any, ...]] = {}  # the last four fields of a thinned tag's TagValues
    found = None if scanned is None else scanned.scalars if of_scalars else scanned.histograms
    if scanned is not None and found is not None and len(found.at):
        order = np.argsort(found.tags, kind="stable")
        numbers, firsts = np.unique(found.tags[order], return_index=True)
        for number, pick in zip(numbers.tolist(), np.split(order, firsts[1:]), strict=True):
            tag = scanned.tags[number]
            columns[tag] = (
                found.at[pick],
                found.steps[pick],
                values_as([found.values[k] for k in pick.tolist()])
                if isinstance(found.values, list)
                else found.values[pick],
                found.walls[pick],
            )
            if scanned.thinned:
                thinned[tag] = _thinned(scanned, number, found.ordinals[pick], of_scalars)
    for tag, entries in read.items():
        at, steps, values, walls = zip(*entries, strict=True)
        mine = (
            np.array(at, np.int64),
            np.array(steps, np.int64),
            values_as(values),
            np.array(walls, np.float64),
        )
        columns[tag] = _in_file_order(columns[tag], mine) if tag in columns else mine
    ordered = sorted(columns.items(), key=lambda item: item[1][0][0])
    return {
        tag: TagValues(steps, values, walls, *thinned.get(tag, ()))
        for tag, (_, steps, values, walls) in ordered
    }


def _thinned(
    scanned: Scanned, number: int, ordinals: np.ndarray, of_scalars: bool
) -> tuple[np.ndarray, int, int | None, int | None]:
    """What a thinned tag's values say of all its values: their places among them, how many, the first NaN and positive step."""

    def step(firsts: np.ndarray | None) -> int | None:
        return int(firsts[number]) if of_scalars and firsts is not None and firsts[number] >= 0 else None

    count = int(ordinals[-1]) + 1  # the last value is always kept
    return ordinals, count, step(scanned.first_nonfinite), step(scanned.first_positive)


def _in_file_order(a: _Columns, b: _Columns) -> _Columns:
    """Two sets of one tag's values as one, by their places in the file."""
    order = np.argsort(np.concatenate([a[0], b[0]]), kind="stable")
    if isinstance(a[2], list):
        every = [*a[2], *b[2]]
        values: Any = [every[k] for k in order.tolist()]
    else:
        values = np.concatenate([a[2], b[2]])[order]
    return (
        np.concatenate([a[0], b[0]])[order],
        np.concatenate([a[1], b[1]])[order],
        values,
        np.concatenate([a[3], b[3]])[order],
    )


def histogram_value(found: bytes | memoryview | HistogramValue) -> HistogramValue:
    """A histogram of :class:`TagValues`, decoded.

    Example:
      >>> from tensorboard.compat.proto.summary_pb2 import HistogramProto
      >>> proto = HistogramProto(min=-1.0, max=1.0, num=3.0, bucket_limit=[-1.0, 0.0, 1.0], bucket=[0.0, 1.0, 2.0])
      >>> h = histogram_value(proto.SerializeToString())
      >>> h.min, h.max, h.num, h.bucket_limit.tolist(), h.bucket.tolist()
      (-1.0, 1.0, 3.0, [-1.0, 0.0, 1.0], [0.0, 1.0, 2.0])
    """
    if isinstance(found, HistogramValue):
        return found
    # Its fields as every writer serializes them: five doubles (fields 1 to
    # 5) and two packed lists of doubles (6 and 7), read as arrays at once;
    # a histogram serialized any other way is read by protobuf.
    sums = [0.0] * 5
    lists = {6: np.zeros(0), 7: np.zeros(0)}
    at = 0
    while at < len(found):
        number, wire = found[at] >> 3, found[at] & 7
        if wire == 1 and 1 <= number <= 5:
            sums[number - 1] = struct.unpack_from("<d", found, at + 1)[0]
            at += 9
        elif wire == 2 and number in lists:
            length, at = _varint(found, at + 1)
            if length % 8:
                return _histogram_by_protobuf(found)
            lists[number] = np.frombuffer(found, "<f8", length // 8, at).astype(np.float64)
            at += length
        else:
            return _histogram_by_protobuf(found)
    least, most, num, total, squares = sums
    return HistogramValue(least, most, num, total, squares, lists[6], lists[7])


def _varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    """The varint at ``at`` in ``data``, and where it ends."""
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def _histogram_by_protobuf(found: bytes | memoryview) -> HistogramValue:
    from tensorboard.compat.proto.summary_pb2 import HistogramProto

    h = HistogramProto.FromString(bytes(found))
    # As arrays: lists of Python floats took four times the memory.
    limits, counts = np.array(h.bucket_limit, np.float64), np.array(h.bucket, np.float64)
    return HistogramValue(h.min, h.max, h.num, h.sum, h.sum_squares, limits, counts)


def _array(tensor: Any) -> Any:
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(tensor)


def _tensor_histogram(tensor: Any) -> HistogramValue:
    """A TensorFlow 2 histogram (rows of left edge, right edge and count) in TensorFlow 1's form.

    The buckets become an empty one of no width at the first left edge, then
    one per right edge, the form ``watch(log_dir=...)`` writes; the sums are
    those of the bucket midpoints, weighted by the counts.
    """
    buckets = _array(tensor).astype(np.float64).reshape(-1, 3)
    if not buckets[:, 2].any():
        # No values: an empty tensor, or TensorFlow's zeros for empty data.
        buckets = np.zeros((1, 3))
    left, right, counts = buckets.T
    middle = (left + right) / 2
    return HistogramValue(
        min=float(left[0]),
        max=float(right[-1]),
        num=float(round(counts.sum())),
        sum=float(counts @ middle),
        sum_squares=float(counts @ middle**2),
        bucket_limit=np.concatenate([left[:1], right]),
        bucket=np.concatenate([[0.0], counts]),
    )
