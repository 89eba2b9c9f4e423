"""The interface the backends feed: what a recorder offers and what it is able to do.

:class:`~jaxcapture_nb._recorder.Recorder` (for :func:`~jaxcapture_nb.capture`)
and :class:`~jaxcapture_nb._stream.Stream` (for :func:`~jaxcapture_nb.watch`)
are fed the same way by the Flax backends. The backends ask a recorder what
it is able to do through the capabilities below, never which class or keep
policy it is, so the keep policy is decided by the recorder alone, and which
steps are recorded by :meth:`SiteRecorder.records_step` alone. A type checker
holds both classes to this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol, runtime_checkable


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
      holds_values: the backend holds a call's values and hands them over,
        in trace order, when the recorder drains it. Otherwise values are
        handed over as each call returns (packed rows) or by host callback,
        and recorded in the order they arrive: then only arrays are kept,
        and with ``grads`` every traced value goes by callback, so that
        values and gradients arrive in execution order.
      keeps_every_value: every value a call sows is kept, not only the
        latest per site.
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

    def accepts(self, path: tuple[Any, ...], name: str) -> bool:
        """Whether values sowed at ``path``/``name`` are to be recorded."""
        ...

    def records_step(self, step: Any) -> Any:
        """Whether training step ``step`` is recorded: a bool, or a traced bool for a traced step.

        The one place ``every`` is decided: a compiled step asks it on the
        device to skip the summaries of the other steps, and the recorder
        asks it again of every value that arrives with its step.
        """
        ...

    def add_drain(self, drain: Callable[[], None]) -> None:
        """Registers a backend function that hands over the values it still holds."""
        ...

    def drain(self) -> None:
        """Asks every backend to hand over the values it still holds."""
        ...

    def add(
        self,
        path: tuple[Any, ...],
        var_type: Any,
        name: str,
        value: Any,
        *,
        step: int | None = None,
        index: int = 0,
        skipped: int = 0,
    ) -> None:
        """Records one sowed value, or its summary (thread-safe).

        Args:
          path: the module path of the site.
          var_type: the Variable type it was sowed as.
          name: the sow name.
          value: the value, or its :class:`~jaxcapture_nb.Summary`.
          step: the training step it belongs to (the call number of the
            step that took the model in), or None when no such step is known
            (an eager call): the recorder then numbers the site's values.
          index: which of the values the site sowed in that step it is.
          skipped: values of the site a backend dropped before this one
            (one that holds only the latest per site), so that numbering
            by values still counts them.
        """
        ...

    def add_row(
        self,
        path: tuple[Any, ...],
        var_type: Any,
        name: str,
        row: Any,
        layout: tuple[tuple[int, ...], Any],
        order: int,
        *,
        step: int | None = None,
        index: int = 0,
    ) -> None:
        """Records the summary a compiled program sent as one packed row (see ``packed_summary``).

        Args:
          path: the module path of the site.
          var_type: the Variable type it was sowed as.
          name: the sow name.
          row: the packed row, on the device or the host.
          layout: the shape and dtype of the summarized array.
          order: when the site was sowed in the step's trace.
          step: as for :meth:`add`.
          index: as for :meth:`add`.
        """
        ...

    def add_table(self, table: Any, step: int | None) -> None:
        """Records a compiled call's table of small values, summarized here (see ``_step_table``).

        Only a recorder that does not hold values takes tables; one that
        does gets each site's summary through :meth:`add`.

        Args:
          table: the ``StepTable`` the call handed over.
          step: as for :meth:`add`; None numbers each site's values.
        """
        ...

    def expect(self, path: tuple[Any, ...], var_type: Any, name: str, index: int = 0) -> None:
        """Called as a program being traced sets up a host callback for a site's ``index``-th value in a step."""
        ...

    def call_returned(self) -> None:
        """Called on the caller's thread once a call has handed over all its values."""
        ...
