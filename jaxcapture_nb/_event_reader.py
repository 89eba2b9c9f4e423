"""Reading a run's TensorBoard event files as TensorBoard serves them: every whole record, past damaged ones.

An event file is a sequence of TFRecords (see :mod:`~jaxcapture_nb._event_file`).
TensorBoard's Python reader stops at the first record that fails its
checksum, and a file whose bytes cannot be decoded raises; its server's
default loader skips such a record and serves the rest. So does this
reader, and a warning says what it skipped: a record whose data fails its
checksum or does not decode (a tag that is not UTF-8, say) is left out; a
damaged length loses the way to the next record, which is found again by
its checksummed length. A last record cut short is a file still being
written, or one whose writer was killed: it is left for later, silently,
as TensorBoard does.

The files are memory-mapped, so a large log is not held in memory whole:
what is held is the values read from it, each scalar as a float and each
histogram as two small arrays, until the rows of a view are made from them.
"""

from __future__ import annotations

import math
import mmap
import os
import pathlib
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from jaxcapture_nb._event_file import masked_crc

_HEADER = 12  # the length and its checksum
_FOOTER = 4  # the data's checksum


class FileReport(NamedTuple):
    """What reading one event file found wrong, as sentences; empty if nothing."""

    path: pathlib.Path
    problems: list[str]


def records(data: bytes | mmap.mmap, problems: list[str]) -> Iterator[tuple[int, bytes]]:
    """Where each whole record of an event file's bytes begins, and its data, in order; what is skipped goes to ``problems``.

    Example:
      >>> from jaxcapture_nb._event_file import framed
      >>> good, bad = framed(b"first"), bytearray(framed(b"second"))
      >>> bad[14] ^= 1  # a flipped bit in the data
      >>> problems = []
      >>> list(records(good + bytes(bad) + framed(b"third") + good[:5], problems))
      [(0, b'first'), (43, b'third')]
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
            yield at, body
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
            for at, body in records(data, problems):
                try:
                    yield Event.FromString(body)
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


class HistogramValue(NamedTuple):
    """A histogram as TensorFlow 1 writes it (TensorBoard's ``HistogramProto``)."""

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limit: np.ndarray
    bucket: np.ndarray


class TagValues(NamedTuple):
    """One tag's values in a file's order, with their steps and wall times: floats for scalars, else :class:`HistogramValue` s."""

    steps: list[int]
    values: list[Any]
    walls: list[float]


class Tags(NamedTuple):
    """A file's histograms and scalars by tag, and the wall times its values span."""

    histograms: dict[str, TagValues]
    scalars: dict[str, TagValues]
    wall_times: tuple[float, float] | None  # the first and the last, None if no value

    def first_steps(self) -> dict[str, int]:
        """Each tag's first step."""
        return {
            tag: found.steps[0] for kind in (self.histograms, self.scalars) for tag, found in kind.items()
        }

    def last_steps(self) -> dict[str, int]:
        """Each tag's highest step."""
        return {
            tag: max(found.steps) for kind in (self.histograms, self.scalars) for tag, found in kind.items()
        }


def tags_of(events: Iterator[Any]) -> Tags:
    """The histograms and scalars of ``events``, TensorFlow 2's tensors as TensorFlow 1's values.

    A tensor belongs to the plugin its tag's metadata names, which
    TensorFlow writes with the tag's first value only; tensors of other
    plugins (images, text) are left out.
    """
    histograms: dict[str, TagValues] = {}
    scalars: dict[str, TagValues] = {}
    plugins: dict[str, str] = {}
    first, last = math.inf, -math.inf
    for event in events:
        values = event.summary.value
        if not values:
            continue
        step, wall_time = event.step, event.wall_time
        first, last = min(first, wall_time), max(last, wall_time)
        for value in values:
            # Most values of a long log are scalars: their path is kept short.
            kind, tag = value.WhichOneof("value"), value.tag
            if kind == "simple_value":
                table, found = scalars, value.simple_value
            elif kind == "histo":
                h = value.histo
                table = histograms
                # As arrays: lists of Python floats took four times the memory.
                limits, counts = np.array(h.bucket_limit), np.array(h.bucket)
                found = HistogramValue(h.min, h.max, h.num, h.sum, h.sum_squares, limits, counts)
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
            entry = table.get(tag)
            if entry is None:
                entry = table[tag] = TagValues([], [], [])
            entry.steps.append(step)
            entry.values.append(found)
            entry.walls.append(wall_time)
    return Tags(histograms, scalars, (first, last) if first <= last else None)


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
