"""The interface the backends feed: one kind of event, and what a recorder is able to do.

:class:`~jaxcapture_nb.capturing.recorder.Recorder` (for :func:`~jaxcapture_nb.capture`)
and :class:`~jaxcapture_nb.runs.stream.Stream` (for :func:`~jaxcapture_nb.watch`)
are fed the same way by the Flax backends: each hands over what a model
sowed as :class:`Delivery` objects, numbered by the recorder's
:class:`~jaxcapture_nb.core.clock.StepClock`, which is the only thing that
numbers steps. The backends ask a recorder what it is able to do through
the capabilities below, never which class or keep policy it is, so the
keep policy is decided by the recorder alone, and which steps are recorded
by :meth:`SiteRecorder.records_step` alone. A type checker holds both
classes to this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from jaxcapture_nb.core.clock import StepClock


class Item(NamedTuple):
    """One value of a site.

    ``value`` is an array (an eager value, or one a capture keeps), a
    :class:`~jaxcapture_nb.Summary`, a :class:`PackedRow` made on the device,
    or a leaf that is not an array (recorded without a summary).
    """

    path: tuple[Any, ...]
    var_type: Any
    name: str
    index: int  # which value of the site in its step: the k-th is recorded as ``name[k]``
    order: int  # when it was sowed while tracing; sorts the values of a step
    value: Any


class PackedRow(NamedTuple):
    """A value's summary packed in one row on the device (see ``summary.packed_summary``), with the value's shape and dtype."""

    row: Any
    shape: tuple[int, ...]
    dtype: Any


class Delivery(NamedTuple):
    """What a backend hands a recorder: the values of one step, in one event.

    Attributes:
      step: the training step, from the recorder's clock.
      items: single values.
      tables: ``StepTable`` objects: the small values of a compiled call
        laid out as one table each, summarized by the recorder (see
        ``_step_table``).
      repeatable: the values may arrive again for the same step (a forward
        pass that ``remat`` recomputes calls back again); a recorder keeps
        the first.
      evaluation: None for a training step's values; for those of a call
        that did not train the model (an evaluation shown at training step
        ``step``, see ``_clock``), the step whose number decides whether
        ``every`` records them. A recorder keeps them apart from the
        training steps'.
    """

    step: int
    items: tuple[Item, ...] = ()
    tables: tuple[Any, ...] = ()
    repeatable: bool = False
    evaluation: int | None = None


class BackendDrains:
    """The part of a recorder that asks its backends for the values they still hold.

    A backend whose values arrive by host callback registers a drain; the
    recorder calls every drain as it settles, and with ``final`` at the end.
    """

    def __init__(self) -> None:
        self._drains: list[Callable[[bool], None]] = []

    def add_drain(self, drain: Callable[[bool], None]) -> None:
        """Registers a backend function that hands over what it still holds (see :meth:`drain`)."""
        self._drains.append(drain)

    def drain(self, final: bool = False) -> None:
        """Asks every backend for what it still holds: the steps it finished, or, ``final``, everything."""
        for drain in self._drains:
            drain(final)


@runtime_checkable
class RunWriter(Protocol):
    """Where a :class:`~jaxcapture_nb.runs.stream.Stream` hands every row it records, to keep a run.

    :class:`~jaxcapture_nb.runs.tensorboard.writer.LogWriter` (a TensorBoard event file)
    is the first; a writer for another tracker or store is a class with
    these four methods, added to the stream's ``writers``.
    """

    def add_rows(self, series: Sequence[Any], step: int, stats: np.ndarray, hists: np.ndarray) -> None:
        """Takes the rows of ``series`` (``SiteSeries``) at ``step``: row ``k`` of ``stats`` and ``hists`` is ``series[k]``'s.

        Called as the rows are recorded, under the stream's lock, so it only
        queues them; the arrays are the stream's own, which later rows may
        overwrite, so a writer copies what it keeps.
        """
        ...

    def flush(self) -> None:
        """Returns once every row taken so far is kept (or dropped after a failure it reports)."""
        ...

    def close(self) -> None:
        """Keeps every row taken, lets go of what it holds, and :meth:`report` s a failure."""
        ...

    def report(self) -> None:
        """Warns, once, if keeping the run failed: where, why, and what to do."""
        ...


@runtime_checkable
class SiteRecorder(Protocol):
    """Where a backend hands the values and summaries a model sows.

    Attributes:
      bins: histogram bins of the summaries.
      grads: whether gradients of perturbed values are recorded too.
      every: record one step in ``every`` (see :meth:`records_step`).
      policy: everything that changes what a traced sow stores; hashable,
        part of the static data of a trace, so that a compiled step is not
        reused across policies.
      summarizes_in_trace: a traced array is summarized inside its trace and
        only the summary leaves it.
      holds_values: the recorder keeps values (``keep="all"`` or
        ``"last"``), so traced values leave a call as they are; otherwise
        only summaries and the tables they are made from leave it, and with
        ``grads`` every traced value goes by host callback, so that values
        and gradients arrive in execution order.
      keeps_every_value: every value a call sows is kept, not only the
        latest per site.
      clock: numbers the steps of what arrives.
    """

    # Read-only here (properties), so a recorder may declare narrower types.
    @property
    def bins(self) -> int: ...
    @property
    def grads(self) -> bool: ...
    @property
    def every(self) -> int: ...
    @property
    def policy(self) -> Hashable: ...
    @property
    def summarizes_in_trace(self) -> bool: ...
    @property
    def holds_values(self) -> bool: ...
    @property
    def keeps_every_value(self) -> bool: ...
    @property
    def clock(self) -> StepClock: ...

    def accepts(self, path: tuple[Any, ...], name: str) -> bool:
        """Whether values sowed at ``path``/``name`` are to be recorded."""
        ...

    def records_step(self, step: Any) -> Any:
        """Whether training step ``step`` is recorded: a bool, or a traced bool for a traced step.

        The one place ``every`` is decided: a compiled step asks it on the
        device to skip the summaries of the other steps, and the recorder
        asks it again of every delivery.
        """
        ...

    def add_drain(self, drain: Callable[[bool], None]) -> None:
        """Registers a backend function that hands over what it still holds; its argument is ``final``."""
        ...

    def drain(self, final: bool = False) -> None:
        """Asks every backend to hand over what it holds; ``final`` at the end of the block."""
        ...

    def deliver(self, delivery: Delivery) -> None:
        """Records a step's values (thread-safe: host callbacks deliver from the runtime's threads)."""
        ...
