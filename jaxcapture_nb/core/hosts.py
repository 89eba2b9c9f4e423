"""Reading device values on the host, when one program runs on many processes.

With ``jax.distributed`` every process runs the same program over global
arrays, and a process holds only the shards on its own devices. Summaries
are computed on the device over the whole array and come out replicated, so
every process can read them through its local copy (:func:`to_host`); a
value split across processes can be read only in part (:func:`local_part`).

Two rules keep such a run from hanging. A program that spans several
processes runs only when every process starts it, in the same order, so
device work is started on the thread that runs the user's code, never on a
background thread, and never by a view that only one process shows. And
host callbacks of a compiled program run where its devices are, so
:func:`host_callback` makes each process receive every callback once.
Whether to show a view at all is :func:`should_display`.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec


def readable(x: Any) -> bool:
    """Whether this process holds all of ``x``: a host value, or an array it can read whole.

    Example:
      >>> readable(jnp.arange(3)), readable(np.arange(3)), readable(1.0)
      (True, True, True)
    """
    return not isinstance(x, jax.Array) or x.is_fully_addressable or x.is_fully_replicated


def to_host(x: Any) -> np.ndarray:
    """A NumPy copy of a device value, read on this process without starting any device work.

    A replicated array that also lives on other processes' devices (every
    summary of a multi-process run) is read through its local copy.

    Raises:
      ValueError: the array is split across processes, so no process holds
        all of it (see :func:`local_part`).

    Example:
      >>> to_host(jnp.arange(3.0)).tolist()
      [0.0, 1.0, 2.0]
    """
    if not isinstance(x, jax.Array) or x.is_fully_addressable:
        return np.asarray(x)
    if x.is_fully_replicated:
        return np.asarray(x.addressable_data(0))
    raise ValueError(_split_message(x))


def fetch_all(values: list[jax.Array]) -> list[np.ndarray]:
    """NumPy copies of arrays that this process holds whole, fetched together.

    An accelerator copies them all at once, every copy started before the
    first is waited for. A CPU's arrays already lie in host memory and are
    read where they are: the copy queue would cost several microseconds an
    array, which a stream that fetches one small array a step pays often.

    Example:
      >>> [a.tolist() for a in fetch_all([jnp.arange(2), jnp.ones(1)])]
      [[0, 1], [1.0]]
    """
    if jax.default_backend() == "cpu":
        return [np.asarray(v) for v in values]
    return jax.device_get(values)


def local_slices(x: jax.Array) -> tuple[slice, ...]:
    """Where the part of ``x`` that this process holds lies: one slice per axis, read from no device.

    The box that this process's shards fill. When they do not fill a box
    (an unusual device order), the box of its first shard.
    """
    boxes = [_box(shard.index, x.shape) for shard in x.addressable_shards]
    corner = [min(b[k][0] for b in boxes) for k in range(x.ndim)]
    end = [max(b[k][1] for b in boxes) for k in range(x.ndim)]
    # A mesh tiles the array, so distinct shards do not overlap (some are copies).
    filled = sum(math.prod(hi - lo for lo, hi in box) for box in set(boxes))
    if filled != math.prod(hi - lo for lo, hi in zip(corner, end, strict=True)):
        corner, end = [lo for lo, _ in boxes[0]], [hi for _, hi in boxes[0]]
    return tuple(slice(lo, hi) for lo, hi in zip(corner, end, strict=True))


def local_part(x: jax.Array) -> tuple[np.ndarray, tuple[slice, ...]]:
    """The part of an array split across processes that this process holds, as one block.

    Reads only local shards, so it starts no program that other processes
    would have to join.

    Returns:
      The block and where it lies in ``x`` (see :func:`local_slices`).
    """
    where = local_slices(x)
    block = np.empty([s.stop - s.start for s in where], x.dtype)
    for shard in x.addressable_shards:
        box = _box(shard.index, x.shape)
        if all(s.start <= lo and hi <= s.stop for (lo, hi), s in zip(box, where, strict=True)):
            inside = tuple(slice(lo - s.start, hi - s.start) for (lo, hi), s in zip(box, where, strict=True))
            block[inside] = np.asarray(shard.data)
    return block, where


def _box(index: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple(slice_.indices(size)[:2] for slice_, size in zip(index, shape, strict=True))


def process_count_of(x: jax.Array) -> int:
    """How many processes hold devices of ``x``."""
    return len({device.process_index for device in x.sharding.device_set})  # type: ignore[attr-defined]  # jax's stubs leave Device untyped


def _split_message(x: jax.Array) -> str:
    return (
        f"this {x.dtype}{list(x.shape)} array is split across {process_count_of(x)} processes, and this "
        "process holds only its own shards; summarize() it on the device (its summary covers "
        "every shard), or gather it with jax.experimental.multihost_utils.process_allgather"
    )


def replicated(x: Any) -> Any:
    """``x``, or a copy every process can read whole when it is split across processes.

    Device work, started now: call it on the thread that runs the user's code.

    Raises:
      ValueError: a split array whose sharding is not a ``NamedSharding``.
    """
    if readable(x):
        return x
    if not isinstance(x.sharding, NamedSharding):
        raise ValueError(_split_message(x))
    return jax.device_put(x, NamedSharding(x.sharding.mesh, PartitionSpec()))


# -- callbacks from compiled programs ---------------------------------------------


def host_callback(callback: Callable[..., None], *arrays: Any) -> None:
    """``jax.debug.callback(callback, *arrays)`` that runs once on every process.

    A plain debug callback runs on the program's first device, so only the
    process that owns it gets the values. Here the arrays are replicated onto
    every device and the callback is partitioned, so every device calls it
    with the whole arrays; each also gets its own entry of a list of device
    numbers, and only the first device of each process passes the call on.
    Each device runs its calls in program order, so every process receives
    the same calls in the same order. With one process this is the plain
    callback. In a multi-process run the program must span every device,
    as a data-parallel training step does.
    """
    if jax.process_count() == 1:
        jax.debug.callback(callback, *arrays)
        return
    everywhere = _all_devices()
    arrays = tuple(
        jax.lax.with_sharding_constraint(a, NamedSharding(everywhere, PartitionSpec())) for a in arrays
    )
    numbers = jax.lax.with_sharding_constraint(
        jnp.arange(everywhere.size, dtype=jnp.int32), NamedSharding(everywhere, PartitionSpec("devices"))
    )
    try:
        jax.debug.callback(functools.partial(_once_per_process, callback), numbers, *arrays, partitioned=True)
    except ValueError as e:
        # Outside a compiled program the callback runs at once, and JAX can
        # hand it only arrays that this process holds entirely.
        raise ValueError(
            "in a multi-process run this value reaches the host only from a compiled program: "
            "wrap the step that computes it (the gradient, with grads=True) in nnx.jit or jax.jit"
        ) from e


@functools.cache
def _all_devices() -> jax.sharding.Mesh:
    return jax.sharding.Mesh(np.array(jax.devices()), ("devices",))


@functools.cache
def _first_local_device() -> int:
    """The position in ``jax.devices()`` of this process's first device."""
    return next(k for k, d in enumerate(jax.devices()) if d.process_index == jax.process_index())


def _once_per_process(callback: Callable[..., None], numbers: np.ndarray, *arrays: Any) -> None:
    # ``numbers`` is this device's entry of the list: one number.
    if int(np.asarray(numbers)[0]) == _first_local_device():
        callback(*arrays)


# -- who shows views ----------------------------------------------------------------


def has_front_end() -> bool:
    """Whether this process draws rich output: an IPython kernel (Jupyter, VS Code, Colab) or marimo.

    A plain ``python`` process, or a terminal IPython, has none.
    """
    if "IPython" in sys.modules:
        from IPython import get_ipython

        if getattr(get_ipython(), "kernel", None) is not None:
            return True
    marimo = sys.modules.get("marimo")
    running = getattr(marimo, "running_in_notebook", None)
    return bool(running is not None and running())


def should_display(display: bool | None) -> bool:
    """Whether to show a view: ``display`` when given; by default (None), only where one is seen.

    That is on process 0 (``jax.process_index() == 0``; every process of a
    ``jax.distributed`` run records the same rows, and one view is enough),
    and only in a notebook front end (see :func:`has_front_end`).

    Example:
      >>> should_display(True), should_display(False)
      (True, False)
    """
    if display is not None:
        return bool(display)
    # Asked second: process_index() starts JAX's backend.
    return has_front_end() and jax.process_index() == 0
