"""Summary: the statistics and exact histogram of one array, and the program that makes them.

:func:`~jaxcapture_nb.summarize` (:mod:`jaxcapture_nb.stats.summarize`) gives
one for every array of a pytree.

Everything here is pure JAX, so it runs on the device and composes with
``jax.jit``, ``nnx.jit``, ``lax.scan`` and ``vmap``. Only the small ``Summary``
arrays ever need to travel to the host.

On a CPU the cost is set by the number of passes over the data and of
scatter updates, so the work is a few plain reductions (min, max, sum, sum of
squares) and one scatter-add that bins every value and counts zeros, NaNs and
infinities in extra slots of the same table. Only when a NaN or Inf shows, or
the values are large enough to overflow float32 or small enough that their
squares underflow, does a careful pass do it all again, masked and scaled by
a power of two (see :mod:`jaxcapture_nb.stats.float32`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.core.hosts import to_host
from jaxcapture_nb.stats.bins import SLOTS, ZERO, Found, edges, fast_pass_holds, index_all_finite
from jaxcapture_nb.stats.histogram import bin_counts
from jaxcapture_nb.stats.integers import summarize_integers
from jaxcapture_nb.stats.passes import (
    WHOLE,
    careful_pass,
    statistics,
    with_zeros_in_their_bin,
)
from jaxcapture_nb.stats.reduced import PASS_FIELDS, float_fields, keyed_jit
from jaxcapture_nb.upstream.jax_internals import is_tracer

DEFAULT_BINS = 64
# Bin indices are read from a float's mantissa (see index_all_finite).
MAX_BINS = 1 << 16


# The counts a summary holds, in the order of its ``counts`` array (the
# histogram follows them); its floats are ``reduced.float_fields()``.
INT_FIELDS = ("count", "nan_count", "posinf_count", "neginf_count", "zero_count")


def _column(array: str, name: str, doc: str) -> property:
    """A read-only statistic: column ``name`` of ``array``, a scalar for an unstacked summary."""
    i = (PASS_FIELDS if array == "stats" else INT_FIELDS).index(name)

    def read(self: Summary) -> Any:
        table = getattr(self, array)
        return None if table is None else table[..., i][()]

    return property(read, doc=doc)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Summary:
    """Statistics of one array, computed on the device.

    All statistics except the non-finite counts are over the finite values
    only. ``hist`` holds exact int32 counts in equal-width bins spanning
    ``[lo, hi]``; its counts add up to ``count``.

    A summary is a pytree of two arrays, ``stats`` and ``counts``, which the
    named statistics below read from; ``shape``, ``dtype``, ``note`` and
    ``reason`` are static. Two leaves rather than one per statistic keep a
    compiled step that returns summaries cheap to call: every output array
    costs the caller host time on each step. When a summary comes out of
    ``lax.scan`` or ``vmap`` both arrays gain leading (stacked) axes; see
    :attr:`stacked_shape`.

    Attributes:
      stats: float32 ``[..., 6 + k]``: min, max, mean, std, lo and hi,
        then the ``k`` statistics of the schema computed on the device (see
        :mod:`jaxcapture_nb.stats.reduced`), which :meth:`statistic` reads.
      counts: int32 ``[..., 5 + bins]``: count, nan_count, posinf_count,
        neginf_count, zero_count, then the histogram.
      shape: shape of the summarized array.
      dtype: name of the summarized array's dtype.
      note: how the values were interpreted, e.g. ``"magnitude of complex
        values"``; empty when they were taken as they are.
      reason: why there is no summary (the arrays are then None), e.g. for
        PRNG key arrays; None for a real summary.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcapture_nb import summarize
      >>> s = summarize(jnp.array([0.0, 1.0, 3.0]), bins=3)
      >>> float(s.max), int(s.zero_count), s.hist.tolist(), s.stats.shape, s.counts.shape
      (3.0, 1, [1, 1, 1], (6,), (8,))
    """

    stats: Any = None
    counts: Any = None
    shape: tuple[int, ...] = dataclasses.field(default=(), metadata={"static": True})
    dtype: str = dataclasses.field(default="", metadata={"static": True})
    note: str = dataclasses.field(default="", metadata={"static": True})
    reason: str | None = dataclasses.field(default=None, metadata={"static": True})

    min = _column("stats", "min", "Smallest finite value.")
    max = _column("stats", "max", "Largest finite value.")
    mean = _column("stats", "mean", "Mean of the finite values.")
    std = _column("stats", "std", "Population standard deviation of the finite values.")
    lo = _column("stats", "lo", "Lower edge of the first bin.")
    hi = _column("stats", "hi", "Upper edge of the last bin.")
    count = _column("counts", "count", "Number of finite values.")
    nan_count = _column("counts", "nan_count", "Number of NaNs.")
    posinf_count = _column("counts", "posinf_count", "Number of +Inf values.")
    neginf_count = _column("counts", "neginf_count", "Number of -Inf values.")
    zero_count = _column("counts", "zero_count", "Number of exact zeros.")

    def statistic(self, key: str) -> Any:
        """The statistic ``key`` of ``stats``, a float column, e.g. one the schema reduces on the device.

        NaN for one added to the schema after the program that made this
        summary was compiled.
        """
        if self.stats is None:
            return None
        i = float_fields().index(key)
        if i >= np.shape(self.stats)[-1]:
            return np.full(np.shape(self.stats)[:-1], np.nan, np.asarray(self.stats).dtype)[()]
        return self.stats[..., i][()]

    @property
    def hist(self) -> Any:
        """int32 counts per bin."""
        return None if self.counts is None else self.counts[..., len(INT_FIELDS) :]

    @property
    def bins(self) -> int:
        """Number of histogram bins (0 when there is no summary)."""
        return 0 if self.counts is None else int(np.shape(self.counts)[-1]) - len(INT_FIELDS)

    @property
    def stacked_shape(self) -> tuple[int, ...]:
        """Leading axes added by ``scan``/``vmap`` around the summarized array."""
        return () if self.counts is None else tuple(np.shape(self.counts)[:-1])

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges, as a host NumPy array."""
        lo = np.asarray(self.lo, np.float64)[..., None]
        hi = np.asarray(self.hi, np.float64)[..., None]
        steps = np.linspace(0.0, 1.0, self.bins + 1)
        with np.errstate(over="ignore"):
            width = hi - lo
        if np.isfinite(width).all():
            return lo + width * steps
        # A float64 range wider than the largest float64: in halves (exact).
        return (lo / 2 + (hi / 2 - lo / 2) * steps) * 2

    def to_numpy(self) -> Summary:
        """Returns the same summary with both arrays on the host (itself, if they are).

        Each array is read with :func:`~jaxcapture_nb.core.hosts.to_host`: for the
        small arrays of a summary, ``np.asarray`` costs about a quarter of what
        ``jax.device_get`` does, and the replicated summary of a multi-process
        run is read through this process's copy, starting no device work.
        """
        if self.counts is None or (
            isinstance(self.stats, np.ndarray) and isinstance(self.counts, np.ndarray)
        ):
            return self
        return dataclasses.replace(self, stats=to_host(self.stats), counts=to_host(self.counts))


def is_summarizable(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or (
        isinstance(x, (bool, int, float, complex)) and not isinstance(x, type)
    )


def _no_summary(x: Any, reason: str) -> Summary:
    return Summary(shape=tuple(np.shape(x)), dtype=str(x.dtype), reason=reason)


def dtype_note(dtype: Any) -> str:
    """How values of ``dtype`` are read: complex ones by their magnitude."""
    return "magnitude of complex values" if jnp.issubdtype(dtype, jnp.complexfloating) else ""


def stats_dtype(dtype: Any) -> np.dtype:
    """The float type of a summary's statistics: float64 for 64-bit values, float32 for the rest.

    64-bit values (float64, int64, uint64, complex128) exist only with
    ``jax_enable_x64``; everything narrower is summarized in float32 whether
    or not it is set, so its summaries do not change with it.

    Example:
      >>> stats_dtype(np.float64), stats_dtype(np.uint64), stats_dtype(np.int32), stats_dtype(np.bool_)
      (dtype('float64'), dtype('float64'), dtype('float32'), dtype('float32'))
    """
    return _stats_dtype(np.dtype(dtype))


@functools.cache
def _stats_dtype(dtype: np.dtype) -> np.dtype:
    wide = (dtype.itemsize == 8 and dtype.kind in "fiu") or dtype == np.complex128
    return np.dtype(np.float64 if wide else np.float32)


def as_real(x: jax.Array) -> tuple[jax.Array, str]:
    """The values to summarize, as float32 or float64 (see :func:`stats_dtype`), and the note on them."""
    note = dtype_note(x.dtype)
    return (jnp.abs(x) if note else x).astype(stats_dtype(x.dtype)), note


def _fast_histogram(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> Found:
    """Histogram of an all-finite array of ordinary magnitude whose reductions are already known."""
    slots = bin_counts(index_all_finite(v, lo_edge, bins / (hi_edge - lo_edge), bins), bins + SLOTS)
    slots = with_zeros_in_their_bin(slots, lo_edge, hi_edge, bins)
    zero = jnp.zeros((), v.dtype)
    return Found(lo, hi, lo_edge, hi_edge, jnp.int32(0), lo, hi, total, squares, zero, slots)


def _before_the_careful_pass(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> Found:
    """Placeholders, when the careful pass comes next."""
    zero = jnp.int32(0)
    return Found(
        lo,
        hi,
        lo_edge,
        hi_edge,
        zero,
        lo,
        hi,
        total,
        squares,
        jnp.zeros((), v.dtype),
        jnp.zeros(bins + SLOTS, zero.dtype),
    )


def summarize_array(x: jax.Array, bins: int) -> Summary:
    shape, dtype = tuple(x.shape), str(x.dtype)
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        return _no_summary(x, "PRNG key array: its bits are not numbers")
    # Summaries observe a value and are never differentiated: a sow inside
    # nnx.grad would otherwise carry tangents through every summary op.
    x = jax.lax.stop_gradient(jnp.asarray(x))
    if x.dtype in (np.int64, np.uint64) and x.size:
        stats, counts = summarize_integers(x, bins)
        note = ""
    else:
        v, note = as_real(x)
        stats, counts = _summarize_floats(v, bins)
    return Summary(stats=stats, counts=counts, shape=shape, dtype=dtype, note=note)


def _summarize_floats(v: jax.Array, bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` and ``counts`` of a float32 or float64 array, in its own float type."""
    # These four reductions share one read of the data (XLA fuses sibling
    # reductions that do not depend on each other). Vectorized min/max may
    # drop a NaN, but the sums never do. Masking every element costs several
    # plain passes on a CPU, so the careful pass runs only when a NaN or Inf
    # shows, or the magnitudes are extreme; its results, like the fast
    # pass's, are all small. Keep the histogram inside the cond even though a
    # cond-free fast pass is faster alone: in a compiled training step XLA
    # then fuses the activation's own computation into the index pass and
    # runs it beside the step's matmuls, and a 4-layer MLP step went from
    # 1.05x to 1.17x its time unsummarized.
    lo = jnp.min(v, initial=jnp.inf)
    hi = jnp.max(v, initial=-jnp.inf)
    total = jnp.sum(v)
    squares = jnp.sum(jnp.square(v))
    lo_edge, hi_edge = edges(lo, hi)
    fast = fast_pass_holds(lo, hi, lo_edge, hi_edge, total, squares)
    found = jax.lax.cond(
        fast,
        functools.partial(_fast_histogram, bins=bins),
        functools.partial(_before_the_careful_pass, bins=bins),
        *(v, lo, hi, lo_edge, hi_edge, total, squares),
    )
    # The careful pass also follows the fast one when an array of subnormal
    # values (and zeros) reads as all-zero on a CPU, which flushes them
    # (https://github.com/jax-ml/jax/issues/16200): only the fast pass's
    # count of exact zeros, taken from the bits, tells. Placed here rather
    # than in the first cond, it appears once in the compiled program.
    flushed = (found.lo == 0) & (found.hi == 0) & (found.slots[bins + ZERO] < v.size)
    found = jax.lax.cond(
        ~fast | flushed, lambda v, _: careful_pass(v, WHOLE, bins), lambda _, found: found, v, found
    )
    return statistics(v, v.size, found, WHOLE, bins)


# A large value's summary as a program of its own, called from the trace:
# JAX traces and lowers it once per shape and type, however many values of
# that shape a step sows (a mixture of experts sows one per layer). Against
# one summary written out per value, a step of eight such values compiled
# in 0.71 s instead of 1.11 s and ran as fast; a loop over the values
# stacked compiled in 0.43 s but ran 4.5 times slower, copying them.
large_summary = keyed_jit(summarize_array, ("bins",))


# Packed layout of a summary: one int32 row, its float statistics bit-cast
# and then its counts. A transfer, a host callback and a compiled program's
# outputs each cost per array, so summaries travel as rows of one table; the
# float64 statistics of 64-bit values take two words each, so their rows are
# wider and travel in a table of their own.


def row_width(stats_type: Any, bins: int) -> int:
    """The int32 words of a packed row whose statistics are of ``stats_type``."""
    return stats_words(np.dtype(stats_type)) + len(INT_FIELDS) + bins


def stats_words(stats_type: np.dtype) -> int:
    """How many 32-bit words a packed row's float statistics take, in ``stats_type``."""
    return len(float_fields()) * stats_type.itemsize // 4


def unpack_summary(row: np.ndarray, shape: tuple[int, ...], dtype: Any, bins: int | None = None) -> Summary:
    """The host :class:`Summary` of a packed row, for an array of ``shape`` and ``dtype``.

    Rows stacked by ``scan`` or ``vmap`` (leading axes) give a stacked summary.
    Given its ``bins``, a row made by a program compiled before a statistic
    was added to the schema (a training step) unpacks with the statistics it
    has; :meth:`Summary.statistic` reads the others as NaN.
    """
    row = np.asarray(row, np.int32)
    name, note = _dtype_name_and_note(dtype)
    stats_type = stats_dtype(dtype)
    words = stats_words(stats_type) if bins is None else row.shape[-1] - len(INT_FIELDS) - bins
    return Summary(
        stats=row[..., :words].view(stats_type),
        counts=row[..., words:],
        shape=tuple(shape),
        dtype=name,
        note=note,
    )


@functools.cache
def _dtype_name_and_note(dtype: Any) -> tuple[str, str]:
    # A watched step unpacks a row per site and step: naming a dtype costs
    # more than the rest of the unpacking.
    return str(dtype), dtype_note(dtype)


def is_concrete_numeric(x: Any) -> bool:
    """Whether ``x`` is a concrete JAX array that :class:`PendingSummaries` takes."""
    return (
        isinstance(x, jax.Array)
        and not is_tracer(x)
        and not jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
    )


def check_bins(bins: Any) -> None:
    """Raises ValueError unless ``bins`` is a number of histogram bins a summary can have."""
    if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an integer from 1 to {MAX_BINS}, got {bins!r}")
