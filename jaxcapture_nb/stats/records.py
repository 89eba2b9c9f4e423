"""Record: one sowed value, and the plain-text table of a list of them.

Records are what every backend produces and what every view consumes, so
this module knows nothing about Flax: a path, a name, a value and its
:class:`~jaxcapture_nb.Summary`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.reduced import PASS_FIELDS, float_fields, value_fields
from jaxcapture_nb.stats.schema import kind_name, type_name
from jaxcapture_nb.stats.summary import Summary


@dataclasses.dataclass
class Record:
    """One value sowed at one site.

    Attributes:
      path: the module path, e.g. ``("encoder", "layers", 0)``.
      name: the name given to ``sow`` (or the method name, for method outputs).
        A pytree value records each leaf on its own, its place appended to
        the name: ``__call__[1]`` for the second item of a returned tuple,
        ``pair['k']`` for a dict key (see :func:`leaf_sites`).
      call_index: which value of this site it is, counted from 0 in the block:
        0 for the first value sowed there, 1 for the second, and so on. Under
        ``keep="last"`` and ``keep="summary"``, which keep one record per site,
        it is the number of the value kept, the latest: after 100 calls of a
        step that sows once, 99.
      var_type: the Variable type it was sowed as, e.g. ``nnx.Intermediate``
        (for Linen, the collection name, e.g. ``"intermediates"``).
      shape: the value's shape (None for values that are not arrays).
      dtype: the value's dtype name (None for values that are not arrays).
      value: the value itself; None when the capture kept only summaries.
      summary: its :class:`Summary`; None for values that are not arrays.
    """

    path: tuple[Any, ...]
    name: str
    call_index: int
    var_type: Any
    shape: tuple[int, ...] | None
    dtype: str | None
    value: Any
    summary: Summary | None

    @property
    def site(self) -> str:
        """The dotted path of the site, e.g. ``"encoder.layers.0.attn_out"``."""
        return ".".join(str(p) for p in (*self.path, self.name))

    @property
    def nonfinite_count(self) -> int:
        """Number of NaN and Inf values (0 when there is no summary)."""
        s = self.summary
        if s is None or s.reason is not None:
            return 0
        return int(np.sum(s.nan_count) + np.sum(s.posinf_count) + np.sum(s.neginf_count))


class Gradient(nnx.Variable):
    """Record type of the gradient that reached a value passed to ``Module.perturb``."""


_CALL = "__call__"


def is_call_output(name: str) -> bool:
    """Whether a site's name is that of a call's output (``capture(methods=True)``).

    A call's output is recorded under the name ``__call__``, each leaf of a
    returned pytree under ``__call__`` and its place (``__call__[1]``).
    """
    return name == _CALL or (name.startswith(_CALL) and name[len(_CALL)] in "[.")


def site_name(path: Sequence[Any], name: str) -> str:
    """How views name a site within its module: call outputs read as outputs.

    ``__call__`` becomes ``(output)`` (``(output[1])`` for a leaf of a
    returned tuple), and the top-level model's own call ``model output``.
    Sowed names stay as they are.

    Example:
      >>> site_name(("dropout",), "__call__"), site_name(("attn",), "__call__[1]")
      ('(output)', '(output[1])')
      >>> site_name((), "__call__"), site_name((), "hidden")
      ('model output', 'hidden')
    """
    if not is_call_output(name):
        return name
    rest = name[len(_CALL) :]
    return f"model output{rest}" if not path else f"(output{rest})"


def site_label(path: Sequence[Any], name: str) -> str:
    """The full name views show for a site: its dotted module path and :func:`site_name`.

    The dotted form ``dropout.__call__`` (``Record.site``) stays what
    ``include`` patterns and comparisons match; this is the text people read.

    Example:
      >>> site_label(("dropout",), "__call__"), site_label(("blocks", 0, "attn"), "__call__[1]")
      ('dropout (output)', 'blocks.0.attn (output[1])')
      >>> site_label((), "__call__"), site_label(("encoder",), "hidden"), site_label((), "h")
      ('model output', 'encoder.hidden', 'h')
    """
    module = ".".join(str(p) for p in path)
    shown = site_name(path, name)
    if not module:
        return shown
    return f"{module} {shown}" if is_call_output(name) else f"{module}.{shown}"


def leaf_sites(name: str, value: Any) -> list[tuple[str, Any]]:
    """The sites one sowed value becomes: itself, or one per leaf of a pytree.

    A value that JAX treats as a single leaf (an array, a number, None) keeps
    its name. A pytree (tuple, list, dict, dataclass, ...) becomes one site
    per leaf, named by appending the leaf's place in Python's own notation:
    ``[1]`` for a sequence item, ``['k']`` for a dict key, ``.f`` for a
    field. So an attention layer returning ``(cache, x)`` records
    ``__call__[0]`` and ``__call__[1]``, and every view shows these names.
    None leaves inside a pytree hold nothing and make no site; an empty
    pytree is kept whole, so a record still says it was sowed.

    Example:
      >>> leaf_sites("out", (None, 1.0, {"a": [2, 3]}))
      [('out[1]', 1.0), ("out[2]['a'][0]", 2), ("out[2]['a'][1]", 3)]
      >>> leaf_sites("h", None)
      [('h', None)]
    """
    leaves, _ = jax.tree_util.tree_flatten_with_path(value)
    if len(leaves) == 1 and not leaves[0][0]:
        return [(name, value)]
    if not leaves:
        return [(name, value)]
    return [(name + jax.tree_util.keystr(path), leaf) for path, leaf in leaves]


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array that gets a summary."""
    return isinstance(value, (jax.Array, np.ndarray))


def shape_and_dtype(value: Any) -> tuple[tuple[int, ...] | None, str | None]:
    """Shape and dtype name of an array, (None, None) for anything else."""
    if is_array(value):
        return tuple(value.shape), str(value.dtype)
    return None, None


def flat_stats(summary: Summary) -> dict[str, float]:
    """Scalar statistics of a summary, pooling any stacked (scan/vmap) axes.

    The keys are those of :data:`~jaxcapture_nb.stats.schema.STATS` but the range
    edges; derived statistics are computed from the others.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcapture_nb import summarize
      >>> stats = flat_stats(summarize(jnp.array([0.0, 2.0, jnp.nan])))
      >>> stats["mean"], round(stats["zero_pct"], 2), stats["nan"]
      (1.0, 33.33, 1)
    """
    s = summary.to_numpy()
    counts = s.count.astype(np.float64)
    n = float(counts.sum())
    size = math.prod(s.shape) * math.prod(summary.stacked_shape)
    stats = {
        "count": int(n),
        "nan": int(s.nan_count.sum()),
        "posinf": int(s.posinf_count.sum()),
        "neginf": int(s.neginf_count.sum()),
        "zero_pct": 100.0 * float(s.zero_count.sum()) / size if size else float("nan"),
    }
    reduced = float_fields()[len(PASS_FIELDS) :]
    if n == 0:
        return schema.with_derived(stats | dict.fromkeys(value_fields(), math.nan))
    if not summary.stacked_shape:
        return schema.with_derived(stats | {k: float(s.statistic(k)) for k in value_fields()})
    # Pool the per-slice statistics, in float64 so that E[x^2] - mean^2 does
    # not cancel away the spread. The reduced ones are means, pooled alike.
    weights = counts / n
    means, stds = s.mean.astype(np.float64), s.std.astype(np.float64)
    with np.errstate(invalid="ignore"):
        mean = float(np.nansum(weights * means))
        spread = float(np.nansum(weights * (np.square(stds) + np.square(means - mean))))
        pooled = {k: float(np.nansum(weights * s.statistic(k).astype(np.float64))) for k in reduced}
    return schema.with_derived(
        stats
        | {
            "mean": mean,
            "std": math.sqrt(spread),
            "min": float(np.nanmin(s.min)),
            "max": float(np.nanmax(s.max)),
        }
        | pooled
    )


# The cells before the statistics in every row of the text table.
HEAD_COLUMNS = ("path", "name", "call", "type", "shape", "dtype")


def table_columns() -> tuple[str, ...]:
    """The text table's header: :data:`HEAD_COLUMNS`, a column per statistic, then NaN/Inf.

    Example:
      >>> table_columns()[len(HEAD_COLUMNS):]
      ('mean', 'std', 'min', 'max', 'zeros%', 'nan/inf')
    """
    return (*HEAD_COLUMNS, *(s.header for s in schema.table_stats()), schema.NONFINITE_HEADER)


def row_cells(record: Record) -> tuple[tuple[str, ...], str | None]:
    """The text of a record's table row, shared by the text and HTML tables.

    Names are written by :func:`~jaxcapture_nb.core.names.shown_name`: a
    newline in a sow name cannot split a row.

    Returns:
      All ``len(table_columns())`` cells and None; or, for a record without
      statistics, the six leading cells and a note saying why.
    """
    path = shown_name(".".join(str(p) for p in record.path)) or "(root)"
    shape = "" if record.shape is None else "(" + ",".join(str(d) for d in record.shape) + ")"
    kind = shown_name(kind_name(record.var_type))
    head = (path, shown_name(record.name), str(record.call_index), kind, shape, record.dtype or "")
    s = record.summary
    if s is None:
        return head, f"{shown_name(type(record.value).__name__)} (not an array)"
    if s.reason is not None:
        return head, f"({s.reason})"
    st = flat_stats(s)
    bad = st["nan"] + st["posinf"] + st["neginf"]
    nonfinite = f"{st['nan']}/{st['posinf'] + st['neginf']}" if bad else "-"
    return (*head, *(s.text(st) for s in schema.table_stats()), nonfinite), None


def values_beside_their_gradients(records: Sequence[Record]) -> list[Record]:
    """The records in their order, but each gradient right after the value it is the gradient of.

    A capture records a call's gradients after its forward pass, in the
    order of the backward pass; a view shows each beside its value (the
    same site and call).

    Example:
      >>> made = lambda kind, name: Record((), name, 0, kind, (2,), "float32", None, None)
      >>> order = [made("Perturbation", "a"), made("Perturbation", "b"), made("Gradient", "b"), made("Gradient", "a")]
      >>> [(r.name, r.var_type) for r in values_beside_their_gradients(order)]
      [('a', 'Perturbation'), ('a', 'Gradient'), ('b', 'Perturbation'), ('b', 'Gradient')]
    """
    gradients: dict[tuple[Any, ...], list[Record]] = {}
    values = set()
    for r in records:
        key = (r.path, r.name, r.call_index)
        if type_name(r.var_type) == "Perturbation":
            values.add(key)
        elif type_name(r.var_type) == "Gradient":
            gradients.setdefault(key, []).append(r)
    ordered = []
    for r in records:
        key = (r.path, r.name, r.call_index)
        if type_name(r.var_type) == "Gradient" and key in values:
            continue  # placed after its value
        ordered.append(r)
        if type_name(r.var_type) == "Perturbation":
            ordered += gradients.pop(key, [])
    return ordered


NOTHING_SOWED = "(nothing was sowed)"


def format_table(records: Sequence[Record], empty: str = NOTHING_SOWED) -> str:
    """A deterministic plain-text table: rounded numbers, no addresses.

    The ``call`` column is :attr:`Record.call_index`: which value of its site
    a row holds, counted from 0 (the latest one's number, where only the
    latest is kept).

    Args:
      records: the records, one row each, in the given order.
      empty: the line under the header when there are no records, saying why.

    Returns:
      The table as a string (a header line and one line per record).
    """
    columns = table_columns()
    rows = [columns]
    for record in records:
        cells, note = row_cells(record)
        rows.append(cells if note is None else (*cells, note, *[""] * (len(columns) - len(cells) - 1)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if not records:
        lines.append(empty)
    return "\n".join(lines)
