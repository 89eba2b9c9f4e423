"""GradientRun: with ``grads=True``, a run's values and their gradients leave by host callback, in the order they ran.

A backward pass has no state to carry values out in, so the gradient that
reaches a value passed through ``Module.perturb`` leaves by callback (see
``callbacks``); the values of the same run go the same way, so that all
arrive in order and are numbered at the staged trace they ran in.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxcapture_nb.backends.nnx import callbacks
from jaxcapture_nb.backends.nnx.handover import Handover
from jaxcapture_nb.backends.nnx.levels import Levels
from jaxcapture_nb.backends.nnx.parcel import ARRAY, Entry, Label, Parcel, pack
from jaxcapture_nb.stats.records import leaf_sites
from jaxcapture_nb.upstream.jax_internals import is_traced, usable_here


class GradientRun:
    """Places and sends the values of a run that records gradients.

    Args:
      levels: the capture's levels, which number the values.
      handover: where values computed already go.
    """

    def __init__(self, levels: Levels, handover: Handover):
        self.levels = levels
        self.handover = handover

    def place(self, key: tuple[Any, ...]) -> tuple[Any, int]:
        """The step tag and index of a value that leaves by callback with gradients (numbered at its staged trace)."""
        level = self.levels.staged()
        if level is None:
            return None, 0
        return (level.step if usable_here(level.step) else None), level.place(key)

    def report(
        self,
        route: int,
        path: tuple[Any, ...],
        var_type: type,
        name: str,
        index: int,
        order: int,
        value: Any,
        step: Any,
    ) -> None:
        """Records a value of the gradients' run, each leaf (see ``leaf_sites``): now if computed, else by callback."""
        recorder = self.handover.recorder
        leaves = [(n, v) for n, v in leaf_sites(name, value) if recorder.accepts(path, n)]
        if not is_traced(value):
            if recorder.holds_values:  # with the rest of its run, in order (see Handover.arrived)
                self.handover.record_in_order()
                entries = [Entry(path, var_type, n, index, order, v) for n, v in leaves]
                self.handover.arrived(Parcel(*_as_arrays(entries)), None, 0, "repeated")
                return
            for leaf_name, leaf in leaves:  # the gradients' run: a training step
                self.handover.deliver_single((path, var_type, leaf_name), leaf, trained=True)
            return
        entries = [Entry(path, var_type, n, index, order, v) for n, v in leaves if isinstance(v, jax.Array)]
        if entries:
            parcel = pack(entries, recorder, None, tables=False)
            callbacks.send(route, parcel, step if usable_here(step) else None, "repeated", True)
            self.handover.called_back = True
            # The call sows: its return moves the clock on.
            self.levels.note_callback(self.levels.staged())


def _as_arrays(entries: list[Entry]) -> tuple[tuple[Label, ...], tuple[Any, ...]]:
    """The labels and values of a parcel that carries ``entries`` as they are."""
    labels = tuple(Label(e.path, e.var_type, e.name, e.index, e.order, ARRAY, None) for e in entries)
    return labels, tuple(e.value for e in entries)
