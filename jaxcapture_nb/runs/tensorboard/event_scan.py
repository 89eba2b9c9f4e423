"""Reading an event file's values in bulk, with NumPy, where they are laid out as every writer lays them out.

A long log holds hundreds of thousands of values, and asking protobuf for
each one costs about two microseconds of Python: most of the time it took
to open a log. But the writers (``watch(log_dir=...)``, tensorboardX,
PyTorch, TensorFlow) serialize an ``Event`` of scalars and histograms the
same way, its fields in number order::

    Event:    [09 wall_time (8 bytes)]  [10 step (varint)]  2a length Summary
    Summary:  0a length Value  0a length Value ...
    Value:    0a length tag    then  15 simple_value (4 bytes)  or  2a length HistogramProto

so the fields of all events can be found at once, in a step per value an
event holds. An event laid out any other way (a TensorFlow 2 tensor,
plugin metadata, a file's version, a tag that is not UTF-8) is left to
protobuf (:func:`~jaxcapture_nb.runs.tensorboard.reader.tags_of`), and so is a whole
file with a damaged record, which :func:`~jaxcapture_nb.runs.tensorboard.reader.records`
reads past.
"""

from __future__ import annotations

import mmap
import struct
from typing import Any, NamedTuple

import numpy as np

from jaxcapture_nb.runs.tensorboard.event_file import FOOTER, HEADER, crc32c_function, masked, masked_crc
from jaxcapture_nb.runs.tensorboard.thinning import Thinning, Values

WINDOW = 1 << 23  # bytes of records read at once: a few times as much memory held while reading
_LENGTH = struct.Struct("<Q")
_CHECKSUM = struct.Struct("<I")

# The first byte of a field: its number and wire type.
_WALL_TIME, _STEP, _SUMMARY = 0x09, 0x10, 0x2A  # Event: double 1, varint 2, message 5
_VALUE = 0x0A  # Summary: message 1
_TAG, _SIMPLE_VALUE, _HISTO = 0x0A, 0x15, 0x2A  # Summary.Value: string 1, float 2, message 5


class Spans(NamedTuple):
    """Where each of some byte strings begins and ends in a file's bytes."""

    starts: np.ndarray
    ends: np.ndarray


def scan_file(data: Any, window: int | None = None, keep: int | None = None) -> Scanned | None:
    """The values of an event file's bytes, read in bulk ``window`` bytes of records at a time; None if a record is damaged.

    What has been read is let go of (where the bytes are a memory map) before
    the next window is read, so a large file is never resident whole.
    Histograms are left in ``data``, as views of their bytes. With
    ``keep``, each tag's values are thinned as they are read to a few times
    the ``keep`` rows a view of them keeps (see :mod:`~jaxcapture_nb.runs.tensorboard.thinning`),
    if every tag's steps go up in the file; otherwise it is read again whole.

    Example:
      >>> from tensorboard.compat.proto.event_pb2 import Event
      >>> from tensorboard.compat.proto.summary_pb2 import Summary
      >>> from jaxcapture_nb.runs.tensorboard.event_file import framed
      >>> events = [Event(step=k, summary=Summary(value=[Summary.Value(tag=f"t{k % 2}", simple_value=k)])) for k in range(5)]
      >>> data = b"".join(framed(e.SerializeToString()) for e in events)
      >>> scanned = scan_file(data, window=40)  # a record or two at a time
      >>> scanned.tags, scanned.scalars.tags.tolist(), scanned.scalars.values.tolist()
      (['t0', 't1'], [0, 1, 0, 1, 0], [0.0, 1.0, 2.0, 3.0, 4.0])
      >>> scanned.scalars.ordinals.tolist()  # each value's place among its tag's
      [0, 0, 1, 1, 2]
    """
    window = window or WINDOW
    names: dict[str, int] = {}
    kinds = [Thinning(keep), Thinning(keep)]  # scalars, histograms
    others, wall_times = [], []
    at = 0
    while True:
        found = bodies(data, at, window)
        if found is None:
            return None
        events, end = found
        part = scan(data, events)
        renumber = np.array([names.setdefault(name, len(names)) for name in part.tags] or [0], np.int64)
        for thinning, values in zip(kinds, (part.scalars, part.histograms), strict=True):
            thinning.add(values._replace(tags=renumber[values.tags]), len(names))
        others.append(part.others)
        wall_times.append(part.wall_times)
        _let_go(data, at, end)
        if end == at or end == len(data):  # read to the end, or to a record cut short
            break
        at = end
    if keep is not None and not all(thinning.kept_order for thinning in kinds):
        return scan_file(data, window)  # a tag's steps went back: thinned, its rows would differ
    return Scanned(
        list(names),
        kinds[0].values,
        kinds[1].values,
        Spans(*(np.concatenate([part[k] for part in others]) for k in range(2))),
        np.concatenate(wall_times),
        thinned=keep is not None,
        first_nonfinite=kinds[0].first_step(len(names), nonfinite=True),
        first_positive=kinds[0].first_step(len(names), nonfinite=False),
    )


def _let_go(data: Any, start: int, end: int) -> None:
    """Lets the pages of a memory map's bytes from ``start`` to ``end`` go from memory (the file keeps them)."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = start // mmap.PAGESIZE * mmap.PAGESIZE
        last = end // mmap.PAGESIZE * mmap.PAGESIZE
        if last > first:
            data.madvise(mmap.MADV_DONTNEED, first, last - first)


def bodies(data: Any, start: int = 0, window: int | None = None) -> tuple[Spans, int] | None:
    """Where the data of each whole record from ``start`` lies, up to ``window`` bytes of records, and where the next begins; None if a record fails its checksums.

    A last record cut short (a file still being written) is left out, as
    :func:`~jaxcapture_nb.runs.tensorboard.reader.records` leaves it.

    Example:
      >>> from jaxcapture_nb.runs.tensorboard.event_file import framed
      >>> data = framed(b"first") + framed(b"second")
      >>> found, end = bodies(data + data[:5])
      >>> [data[a:b] for a, b in zip(*found)], end == len(data)
      ([b'first', b'second'], True)
      >>> damaged = bytearray(data)
      >>> damaged[14] ^= 1  # a flipped bit in the first record's data
      >>> bodies(bytes(damaged)) is None
      True
    """
    view = memoryview(data)
    starts: list[int] = []
    length_at = _LENGTH.unpack_from  # bound once: this loop runs once a record
    at, size = start, len(view)
    stop = size if window is None else start + window
    while at + HEADER <= size and at < stop:
        end = at + HEADER + length_at(view, at)[0] + FOOTER
        if end > size:
            # Cut short, or a damaged length, which only the careful reader reads past.
            if masked_crc(view[at : at + 8]) != _CHECKSUM.unpack_from(view, at + 8)[0]:
                return None
            break
        starts.append(at)
        at = end
    u = np.frombuffer(data, np.uint8)
    records = np.array(starts, np.int64)
    lengths = _read(_unaligned(u, "<u8"), records).astype(np.int64)
    bodies = Spans(records + HEADER, records + HEADER + lengths)
    checksums = _unaligned(u, "<u4")
    if not np.array_equal(masked(crc32c_at(u, Spans(records, records + 8))), _read(checksums, records + 8)):
        return None
    if not np.array_equal(masked(crc32c_at(u, bodies)), _read(checksums, bodies.ends)):
        return None
    return bodies, at


def crc32c_at(u: np.ndarray, spans: Spans) -> np.ndarray:
    """The CRC-32C of the bytes of each span of ``u``, as ``uint64``: short ones all at once, a byte at a time.

    Most records of a long log are short (a loss: 30 bytes), and one C call
    for each took most of the time to check them.

    Example:
      >>> from jaxcapture_nb.runs.tensorboard.event_file import crc32c_function
      >>> data = b"a loss of 0.25, and a longer record" * 3
      >>> spans = Spans(np.array([0, 2, 5]), np.array([9, 2, len(data)]))
      >>> found = crc32c_at(np.frombuffer(data, np.uint8), spans)
      >>> found.tolist() == [crc32c_function()(data[a:b]) for a, b in zip(*spans)]
      True
    """
    found = np.zeros(len(spans.starts), np.uint64)
    lengths = spans.ends - spans.starts
    short = lengths <= _SHORT
    for length in np.unique(lengths[short]).tolist():
        pick = np.flatnonzero(short & (lengths == length))
        crc = np.full(len(pick), 0xFFFFFFFF, np.uint32)
        for k in range(length):
            crc = _CRC32C_TABLE[(crc ^ u[spans.starts[pick] + k]) & 0xFF] ^ (crc >> 8)
        found[pick] = crc ^ 0xFFFFFFFF
    crc32c = crc32c_function()
    view = u.data
    for k in np.flatnonzero(~short).tolist():
        found[k] = crc32c(view[spans.starts[k] : spans.ends[k]])
    return found


def _crc32c_table() -> np.ndarray:
    """The CRC-32C (Castagnoli) of each byte: the reflected polynomial 0x82F63B78, a bit at a time."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1).astype(np.uint32)
    return table


_CRC32C_TABLE = _crc32c_table()
_SHORT = 64  # bytes: spans this long or shorter are checked a byte at a time, all together


class Scanned(NamedTuple):
    """The values of the events laid out as writers lay them out, and the events left to protobuf."""

    tags: list[str]  # by their numbers in ``Values.tags``
    scalars: Values
    histograms: Values
    others: Spans  # the events left to protobuf
    wall_times: np.ndarray  # of the events read here that hold a value
    thinned: bool = False  # whether each tag keeps only some of its values (``Values.ordinals`` says which)
    # Per tag number, of all its scalars read here, thinned or not: the first
    # step of a NaN or an infinity, and of a value above 0 (-1: none).
    first_nonfinite: np.ndarray | None = None
    first_positive: np.ndarray | None = None


def scan(data: Any, events: Spans) -> Scanned:
    """The values of the ``events`` of ``data`` that are laid out as writers lay them out.

    Example:
      >>> from tensorboard.compat.proto.event_pb2 import Event
      >>> from tensorboard.compat.proto.summary_pb2 import Summary
      >>> from jaxcapture_nb.runs.tensorboard.event_file import framed
      >>> loss = Summary(value=[Summary.Value(tag="loss", simple_value=0.25)])
      >>> data = framed(Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
      >>> data += framed(Event(wall_time=1.5, step=3, summary=loss).SerializeToString())
      >>> events, _ = bodies(data)
      >>> scanned = scan(data, events)
      >>> scanned.tags, scanned.scalars.steps.tolist(), scanned.scalars.values.tolist()
      (['loss'], [3], [0.25])
      >>> scanned.others.starts.tolist() == events.starts[:1].tolist()  # the file's version, which is no summary
      True
    """
    u = np.frombuffer(data, np.uint8)
    starts, ends = events
    # Each field is left out where it holds its default (a wall time or step of 0).
    has_wall = (ends - starts >= 9) & (_bytes_at(u, starts) == _WALL_TIME)
    walls = np.where(has_wall, _read(_unaligned(u, "<f8"), starts + 1), 0.0)
    laid_out = np.ones(len(starts), bool)
    at = np.where(has_wall, starts + 9, starts)
    has_step = (at < ends) & (_bytes_at(u, at) == _STEP)
    step, after, ok = varints(u, at + 1)
    laid_out &= ok | ~has_step
    steps, at = np.where(has_step, step, 0), np.where(has_step, after, at)
    empty = at == ends  # a wall time and a step: no value
    length, summary, ok = varints(u, at + 1)
    laid_out &= empty | ((_bytes_at(u, at) == _SUMMARY) & ok & (summary + length == ends))
    holding = laid_out & ~empty & (summary < ends)  # an empty summary holds no value
    event, value = _values(u, Spans(summary, ends), np.flatnonzero(holding), laid_out)
    tag_length, tag_at, ok = varints(u, value.starts + 1)
    ok &= tag_length > 0
    kind_at = tag_at + tag_length
    kind = _bytes_at(u, kind_at)
    histo_length, histo_at, histo_ok = varints(u, kind_at + 1)
    scalar = (kind == _SIMPLE_VALUE) & (kind_at + 5 == value.ends)
    histo = (kind == _HISTO) & histo_ok & (histo_at + histo_length == value.ends)
    laid_out[event[~((_bytes_at(u, value.starts) == _TAG) & ok & (scalar | histo))]] = False
    tags, tag, readable = _tag_numbers(u, Spans(tag_at, kind_at), laid_out[event])
    laid_out[event[~readable]] = False
    kept = laid_out[event]

    def of_kind(which: np.ndarray) -> tuple[np.ndarray, Values]:
        pick = np.flatnonzero(kept & which)
        return pick, Values(value.starts[pick], tag[pick], steps[event[pick]], walls[event[pick]], None)

    pick, scalars = of_kind(scalar)
    scalars = scalars._replace(values=_read(_unaligned(u, "<f4"), kind_at[pick] + 1).astype(np.float64))
    pick, histograms = of_kind(histo)
    view = memoryview(data)
    histograms = histograms._replace(
        values=[view[a:b] for a, b in zip(histo_at[pick].tolist(), value.ends[pick].tolist(), strict=True)]
    )
    others = Spans(starts[~laid_out], ends[~laid_out])
    return Scanned(tags, scalars, histograms, others, walls[np.unique(event[kept])])


def varints(u: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The varints at ``at`` of ``u``: their values, where each ends, and whether each is whole in at most 5 bytes.

    Example:
      >>> u = np.array([0x05, 0xAC, 0x02, 0xFF], np.uint8)
      >>> value, end, ok = varints(u, np.array([0, 1, 3]))
      >>> value[:2].tolist(), end[:2].tolist(), ok.tolist()  # the last runs past the end
      ([5, 300], [1, 3], [True, True, False])
    """
    byte = _bytes_at(u, at).astype(np.int64)
    value, end = byte & 0x7F, at + 1
    # Most are one byte: only the longer ones are read on.
    going = np.flatnonzero(byte >= 0x80)
    for k in range(1, 5):
        if not len(going):
            break
        byte = _bytes_at(u, at[going] + k).astype(np.int64)
        value[going] |= (byte & 0x7F) << (7 * k)
        end[going] = at[going] + k + 1
        going = going[byte >= 0x80]
    ok = end <= len(u)
    ok[going] = False
    return value, end, ok


def _values(
    u: np.ndarray, summaries: Spans, events: np.ndarray, laid_out: np.ndarray
) -> tuple[np.ndarray, Spans]:
    """Each value in the summaries of ``events``: its event, and where its fields lie, in file order.

    An event whose values do not fill its summary exactly is marked not ``laid_out``.
    """
    found_events, found_starts, found_ends = [], [], []
    at, stop = summaries.starts[events], summaries.ends[events]
    while len(events):
        length, fields, ok = varints(u, at + 1)
        ok &= _bytes_at(u, at) == _VALUE
        end = np.where(ok, fields + length, stop + 1)
        found_events.append(events)
        found_starts.append(fields)
        found_ends.append(end)
        laid_out[events[end > stop]] = False
        going = end < stop
        events, at, stop = events[going], end[going], stop[going]
    if not found_events:
        nothing = np.zeros(0, np.int64)
        return nothing, Spans(nothing, nothing)
    starts = np.concatenate(found_starts)
    order = np.argsort(starts, kind="stable")
    return np.concatenate(found_events)[order], Spans(starts[order], np.concatenate(found_ends)[order])


def _tag_numbers(u: np.ndarray, tags: Spans, wanted: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The distinct tags of the ``wanted`` values, each value's tag's number among them, and whether it is UTF-8."""
    names: list[str] = []
    numbers = np.full(len(tags.starts), -1, np.int64)
    lengths = tags.ends - tags.starts
    words = _unaligned(u, "<u8")
    for length in np.unique(lengths[wanted]).tolist():
        pick = np.flatnonzero(wanted & (lengths == length))
        # Tags of one length read as a few 8-byte words (the last one's bytes
        # past the tag zeroed), told apart by a hash, checked word by word.
        spelled = np.stack([_read(words, tags.starts[pick] + at) for at in range(0, length, 8)], axis=1)
        spelled[:, -1] &= np.uint64(2 ** (8 * (length - 8 * (spelled.shape[1] - 1))) - 1)
        hashed = (spelled * _odd_multipliers(spelled.shape[1])).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(hashed, return_index=True, return_inverse=True)
        if not np.array_equal(spelled, spelled[first[inverse]]):
            _, first, inverse = np.unique(spelled, axis=0, return_index=True, return_inverse=True)
        number = np.empty(len(first), np.int64)
        for k, at in enumerate(tags.starts[pick[first]].tolist()):
            try:
                names.append(u[at : at + length].tobytes().decode("utf-8"))
                number[k] = len(names) - 1
            except UnicodeDecodeError:
                number[k] = -1
        numbers[pick] = number[inverse.reshape(-1)]
    return names, numbers, ~wanted | (numbers >= 0)


def _odd_multipliers(count: int) -> np.ndarray:
    """Different odd numbers, one per word of a tag, that spread its words over a hash."""
    return (np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)


def _unaligned(u: np.ndarray, dtype: str) -> np.ndarray:
    """The numbers of ``dtype`` starting at every byte of ``u``: element ``k`` is read from bytes ``k`` on."""
    size = np.dtype(dtype).itemsize
    if len(u) < size:
        return np.zeros(1, dtype)
    return np.ndarray((len(u) - size + 1,), dtype, buffer=u, strides=(1,))


def _read(numbers: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The elements of ``numbers`` at ``at`` (the last where ``at`` runs past it)."""
    # Indexing, not take(), which first copies a strided array whole.
    return numbers[np.minimum(at, len(numbers) - 1)]


def _bytes_at(u: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The bytes at ``at`` (garbage past the end, which the lengths read tell apart)."""
    return _read(u, at) if len(u) else np.zeros(len(at), np.uint8)
