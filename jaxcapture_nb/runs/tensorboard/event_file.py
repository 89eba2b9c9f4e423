"""One TensorBoard event file, written a batch of records at a time, and never left with half a record.

An event file is a sequence of TFRecords, each a serialized ``Event``
framed as TensorBoard's readers expect: its length as a little-endian
uint64, the length's masked CRC-32C, the bytes, and their masked CRC-32C.
The first record says the file's version.

tensorboardX writes the same records, but through a bounded queue that a
thread of its own empties: when that thread died on a full disk, the next
writer blocked for ever on the full queue, and ``watch()``'s block never
ended. Here the caller writes, and a failed write raises where it happened.
The file is also opened for exclusive creation under a name no other
writer takes: tensorboardX names a file by the second it was made and
opens it for overwrite, so two runs started in the same second in one
folder kept one file.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

_MASK_DELTA = 0xA282EAD8
HEADER = 12  # bytes before a record's data: its length and the length's checksum
FOOTER = 4  # bytes after it: the data's checksum

# Counts the files this process makes: two made in one second get different names.
_made = itertools.count()


@functools.cache
def crc32c_function() -> Callable[[Any], int]:
    """The CRC-32C function: the ``crc32c`` package's, else tensorboardX's (pure Python, slower)."""
    try:
        import crc32c

        return crc32c.crc32c
    except ImportError:
        from tensorboardX import crc32c as pure_python

        return pure_python.crc32c


def masked_crc(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC-32C of ``data``: rotated right by 15 bits, plus a constant.

    Example:
      >>> hex(masked_crc(b"hello"))
      '0x191c1fbb'
    """
    return masked(crc32c_function()(data))


def masked(crc: Any) -> Any:
    """A CRC-32C as TFRecord writes it: an int, or a NumPy array of them as ``uint64``.

    Example:
      >>> import numpy as np
      >>> int(masked(np.array([0x12345678], np.uint64))[0]) == masked(0x12345678)
      True
    """
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def framed(data: bytes) -> bytes:
    """``data`` as one TFRecord: length, its checksum, the data, its checksum.

    Example:
      >>> record = framed(b"hello")
      >>> len(record), record[:8] == (5).to_bytes(8, "little")
      (21, True)
    """
    header = struct.pack("<Q", len(data))
    return b"".join(
        (header, struct.pack("<I", masked_crc(header)), data, struct.pack("<I", masked_crc(data)))
    )


class EventFile:
    """A new event file in ``log_dir``, made for this writer alone.

    The file's first record, its version, is written with the first
    :meth:`write`.

    Args:
      log_dir: the run's folder, made if missing.
      resumed_at: the step a resumed run goes on from, which a SessionLog
        START event after the version says; None for a run's first file.

    Attributes:
      path: the file, ``events.out.tfevents.<seconds>.<host>.<pid>.<n>``:
        TensorBoard reads every file whose name holds ``tfevents``, in name
        order, and the process id and count keep two files of one second
        apart.

    Raises:
      OSError: the folder or the file cannot be made (the message names it).
    """

    def __init__(self, log_dir: str | os.PathLike[str], resumed_at: int | None = None):
        from tensorboardX.proto.event_pb2 import Event, SessionLog

        self._event = Event
        os.makedirs(log_dir, exist_ok=True)
        while True:
            now = time.time()
            name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}.{next(_made)}"
            self.path = os.path.join(os.fspath(log_dir), name)
            try:
                self._fd = os.open(
                    self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
                )
                break
            except FileExistsError:  # a file made by another process with our id: take the next name
                continue
        self._size = 0  # bytes of whole records on disk
        self.kept = 0  # of the records of a write that failed, those in the file
        # Written with the first records, so that a full disk fails a write, not the file's making.
        self._header = [self.record(wall_time=now, file_version="brain.Event:2")]
        if resumed_at is not None:
            # A run resumed from a checkpoint: TensorBoard drops what earlier
            # files logged from this step on (EventAccumulator's
            # _CheckForRestartAndMaybePurge), and so does open_run.
            start = SessionLog(status=SessionLog.START)
            self._header.append(self.record(wall_time=now, step=resumed_at, session_log=start))

    def record(self, **fields) -> bytes:
        """One ``Event`` with ``fields`` as a framed record."""
        return framed(self._event(**fields).SerializeToString())

    def write(self, records: list[bytes]) -> None:
        """Appends ``records`` (from :meth:`record`) to the file.

        The bytes go to the operating system, which keeps them if this
        process is killed.

        Raises:
          OSError: not all could be written (a full disk, say). The file is
            cut back to the last whole record, and :attr:`kept` says how
            many of ``records`` it holds.
        """
        self.kept = 0
        records = [*self._header, *records]
        data = memoryview(b"".join(records))
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError:
            ends = list(itertools.accumulate(map(len, records)))
            whole = sum(end <= written for end in ends)
            self.kept = max(whole - len(self._header), 0)
            if whole >= len(self._header):
                self._header = []
            self._size += ends[whole - 1] if whole else 0
            # Cutting frees the blocks of the partial record: this works on a full disk.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
                os.lseek(self._fd, self._size, os.SEEK_SET)
            raise
        self._size += written
        self._header = []

    def close(self) -> None:
        """Closes the file; what was written stays."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
