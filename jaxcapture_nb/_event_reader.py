"""Reading a run's TensorBoard event files as TensorBoard serves them: every whole record, past damaged ones.

An event file is a sequence of TFRecords (see :mod:`~jaxcapture_nb._event_file`).
TensorBoard's Python reader stops at the first record that fails its
checksum, and a file whose bytes cannot be decoded raises; its server's
default loader skips such a record and serves the rest. So does this
reader, and it says what it skipped: a record whose data fails its
checksum or does not decode (a tag that is not UTF-8, say) is left out; a
damaged length loses the way to the next record, which is found again by
its checksummed length. A last record cut short is a file still being
written, or one whose writer was killed: it is left for later, silently,
as TensorBoard does.

The files are memory-mapped, so reading a large log costs the memory of
what is kept from it, not of the file.
"""

from __future__ import annotations

import mmap
import os
import pathlib
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

from jaxcapture_nb._event_file import masked_crc

_HEADER = 12  # the length and its checksum
_FOOTER = 4  # the data's checksum


class FileReport(NamedTuple):
    """What reading one event file found wrong, as sentences; empty if nothing."""

    path: pathlib.Path
    problems: list[str]


def records(data: bytes | mmap.mmap, problems: list[str]) -> Iterator[bytes]:
    """The data of each whole record of an event file's bytes, in order; what is skipped goes to ``problems``.

    Example:
      >>> from jaxcapture_nb._event_file import framed
      >>> good, bad = framed(b"first"), bytearray(framed(b"second"))
      >>> bad[14] ^= 1  # a flipped bit in the data
      >>> problems = []
      >>> list(records(good + bytes(bad) + framed(b"third") + good[:5], problems))
      [b'first', b'third']
      >>> problems
      ['the record at byte 21 fails its checksum']
    """
    at, size = 0, len(data)
    while at + _HEADER <= size:
        header = bytes(data[at : at + 8])
        if struct.unpack_from("<I", data, at + 8)[0] != masked_crc(header):
            found = _next_record(data, at + 1)
            problems.append(f"bytes {at} to {found} are damaged (a record's length fails its checksum)")
            at = found
            continue
        (length,) = struct.unpack_from("<Q", data, at)
        end = at + _HEADER + length + _FOOTER
        if end > size:
            return  # cut short: still being written, or its writer was killed
        body = bytes(data[at + _HEADER : end - _FOOTER])
        if struct.unpack_from("<I", data, end - _FOOTER)[0] != masked_crc(body):
            problems.append(f"the record at byte {at} fails its checksum")
        else:
            yield body
        at = end


def _next_record(data: bytes | mmap.mmap, start: int) -> int:
    """Where the next record whose length passes its checksum begins at or after ``start``; else the end."""
    for at in range(start, len(data) - _HEADER + 1):
        if struct.unpack_from("<I", data, at + 8)[0] == masked_crc(bytes(data[at : at + 8])):
            return at
    return len(data)


def events(path: pathlib.Path, problems: list[str]) -> Iterator[Any]:
    """The ``Event`` s of one event file, in order; what is skipped goes to ``problems``."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for k, body in enumerate(records(data, problems)):
                try:
                    yield Event.FromString(body)
                except DecodeError as error:
                    problems.append(f"record {k} does not decode as an event ({error})")


def problems_text(report: FileReport) -> str:
    """One sentence of what was skipped in a file, for a warning.

    Example:
      >>> problems_text(FileReport(pathlib.Path("run/events.out.tfevents.1"), ["the record at byte 21 fails its checksum"]))
      'run/events.out.tfevents.1: skipped what is damaged (the record at byte 21 fails its checksum) and read the rest, as TensorBoard does'
    """
    shown = "; ".join(report.problems[:3])
    more = f"; and {len(report.problems) - 3} more" if len(report.problems) > 3 else ""
    return f"{report.path}: skipped what is damaged ({shown}{more}) and read the rest, as TensorBoard does"


class HistogramValue(NamedTuple):
    """A histogram as TensorFlow 1 writes it (TensorBoard's ``HistogramProto``)."""

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limit: list[float]
    bucket: list[float]


class HistogramEvent(NamedTuple):
    wall_time: float
    step: int
    histogram_value: HistogramValue


class ScalarEvent(NamedTuple):
    wall_time: float
    step: int
    value: float


class Tags(NamedTuple):
    """A file's histograms and scalars, each tag's events in the file's order."""

    histograms: dict[str, list[HistogramEvent]]
    scalars: dict[str, list[ScalarEvent]]

    def first_steps(self) -> dict[str, int]:
        """Each tag's first step."""
        return {tag: events[0].step for kind in self for tag, events in kind.items()}

    def last_steps(self) -> dict[str, int]:
        """Each tag's highest step."""
        return {tag: max(e.step for e in events) for kind in self for tag, events in kind.items()}


def tags_of(events: Iterator[Any]) -> Tags:
    """The histograms and scalars of ``events``, TensorFlow 2's tensors as TensorFlow 1's values.

    A tensor belongs to the plugin its tag's metadata names, which
    TensorFlow writes with the tag's first value only; tensors of other
    plugins (images, text) are left out.
    """
    histograms: dict[str, list[HistogramEvent]] = {}
    scalars: dict[str, list[ScalarEvent]] = {}
    plugins: dict[str, str] = {}
    for event in events:
        for value in event.summary.value:
            if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                plugins.setdefault(value.tag, value.metadata.plugin_data.plugin_name)
            kind = value.WhichOneof("value")
            if kind == "histo":
                h = value.histo
                histogram = HistogramValue(
                    h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket)
                )
                histograms.setdefault(value.tag, []).append(
                    HistogramEvent(event.wall_time, event.step, histogram)
                )
            elif kind == "simple_value":
                scalars.setdefault(value.tag, []).append(
                    ScalarEvent(event.wall_time, event.step, value.simple_value)
                )
            elif kind == "tensor" and plugins.get(value.tag) == "histograms":
                histogram = _tensor_histogram(value.tensor)
                histograms.setdefault(value.tag, []).append(
                    HistogramEvent(event.wall_time, event.step, histogram)
                )
            elif kind == "tensor" and plugins.get(value.tag) == "scalars":
                scalar = float(_array(value.tensor).item())
                scalars.setdefault(value.tag, []).append(ScalarEvent(event.wall_time, event.step, scalar))
    return Tags(histograms, scalars)


def _array(tensor: Any) -> Any:
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(tensor)


def _tensor_histogram(tensor: Any) -> HistogramValue:
    """A TensorFlow 2 histogram (rows of left edge, right edge and count) in TensorFlow 1's form.

    The buckets become an empty one of no width at the first left edge, then
    one per right edge, the form ``watch(log_dir=...)`` writes; the sums are
    those of the bucket midpoints, weighted by the counts.
    """
    import numpy as np

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
        bucket_limit=[float(left[0]), *right.tolist()],
        bucket=[0.0, *counts.tolist()],
    )
