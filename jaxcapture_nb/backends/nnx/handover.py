"""Handover: what reaches the host, handed to the recorder as one Delivery per step, in the order the model ran.

Values reach the host three ways: with a call's exit as the call returns
(:meth:`Handover.take`), one at a time from eager code
(:meth:`Handover.deliver_single`), or by host callback on the runtime's
thread (:meth:`Handover.arrived`). Each is numbered by the recorder's clock
here, and nowhere else in the NNX backend.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxcapture_nb.backends.nnx.exits import Exit
from jaxcapture_nb.backends.nnx.levels import LAZY
from jaxcapture_nb.backends.nnx.parcel import ROW, STATIC, Parcel
from jaxcapture_nb.backends.nnx.routes import trace_order
from jaxcapture_nb.core.protocols import Delivery, Item, PackedRow, SiteRecorder


class Handover:
    """Hands what comes back from a model's calls to its recorder, each value once and each step in order.

    Args:
      recorder: where values go.

    Attributes:
      received: values the recorder took from sows inside compiled code.
      delivered: deliveries handed over.
      called_back: whether any value left by host callback.
    """

    def __init__(self, recorder: SiteRecorder):
        self.recorder = recorder
        self.received = 0
        self.delivered = 0
        self.called_back = False
        # Leaves of calls already handed over: JAX and Flax may rebuild a call's outputs twice.
        self._taken: collections.deque[Any] = collections.deque(maxlen=64)
        # Values that came back by callback, by (step, callback): a loop over
        # layers calls one callback once per layer, and its values are stacked.
        self._groups: dict[tuple[float, int, bool], list[Parcel]] = {}
        self._groups_lock = threading.Lock()
        self._held: list[Parcel] = []  # a capture's parcels from callbacks, until drained

    def take(self, exit: Exit) -> bool:
        """A call's exit back in Python: its values go to the recorder, once; False if they went already.

        JAX may rebuild a call's outputs twice.
        """
        first = jax.tree.leaves((exit.step, exit.parcel))[0]
        if any(first is taken for taken in self._taken):
            return False
        self.record_in_order()
        self._taken.append(first)
        clock = self.recorder.clock
        if exit.role == LAZY:
            # A transform called from eager code: its values are one eager step.
            if exit.parcel:
                key = first_key(exit.parcel)
                self.deliver_stamped(exit.trained, key, lambda: clock.single(key), exit.parcel)
            return True
        # Recording gradients, every call is a training step: its values all leave by callback,
        # stamped as the gradients' run (see NnxCapture.report), and the clock must move on with each call.
        trained = exit.trained or exit.scanned or self.recorder.grads
        evaluation = clock.evaluation(trained) if exit.sowed else None
        if evaluation is not None:
            if exit.parcel:
                self.deliver(evaluation.step, exit.parcel, evaluation=evaluation.gate)
        elif exit.sowed or exit.scanned:
            step = clock.call()
            if exit.parcel:
                self.deliver(step, exit.parcel)
            if exit.scanned:
                clock.scanned(step, exit.step)
        return True

    def deliver(
        self, step: int, parcel: Parcel, repeatable: bool = False, evaluation: int | None = None
    ) -> None:
        """Hands a parcel's values over as the values of ``step`` (an evaluation's, with ``evaluation``)."""
        items = sorted(_items(parcel), key=lambda item: item.order)
        self.delivered += 1
        self.recorder.deliver(Delivery(step, tuple(items), tuple(parcel.tables), repeatable, evaluation))

    def deliver_stamped(
        self, trained: bool, key: Any, counted: Callable[[], int], parcel: Parcel, repeatable: bool = False
    ) -> None:
        """Delivers values that arrived on their own: at an evaluation's step, or at the step ``counted()`` gives."""
        evaluation = self.recorder.clock.evaluation(trained, key)
        if evaluation is not None:
            self.deliver(evaluation.step, parcel, repeatable, evaluation=evaluation.gate)
        else:
            self.deliver(counted(), parcel, repeatable)

    def deliver_single(self, key: tuple[Any, ...], value: Any, trained: bool = False) -> None:
        """Delivers one value sowed in eager code (or computed already), numbered as its own step or an evaluation's."""
        self.record_in_order()
        path, var_type, name = key
        item = Item(path, var_type, name, 0, next(trace_order), value)
        self.delivered += 1
        clock = self.recorder.clock
        evaluation = clock.evaluation(trained, key)
        if evaluation is None:
            self.recorder.deliver(Delivery(clock.single(key), (item,)))
        else:
            self.recorder.deliver(Delivery(evaluation.step, (item,), evaluation=evaluation.gate))

    def arrived(self, parcel: Parcel, step: Any, callback_id: int, how: str, trained: bool = True) -> None:
        """A callback's parcel, on the host (on the runtime's thread); ``step`` as the device saw it, or None.

        ``how`` says what a second call of the callback for one step means (see ``callbacks.send``).
        """
        self.called_back = True
        clock = self.recorder.clock
        if self.recorder.holds_values:
            # A capture records in execution order: callbacks of values that do
            # not depend on each other may run in either order, so they wait,
            # to be sorted by when they were sowed.
            with self._groups_lock:
                self._held.append(parcel)
            return
        key = first_key(parcel)
        if step is None:
            self.deliver_stamped(trained, key, lambda: clock.single(key), parcel, how == "repeated")
            return
        step = float(step)
        if how != "stacked":
            self.deliver_stamped(trained, key, lambda: clock.tagged(step), parcel, how == "repeated")
            return
        with self._groups_lock:
            self._groups.setdefault((step, callback_id, trained), []).append(parcel)
            done = [key for key in self._groups if key[0] < step]
            groups = [(key, self._groups.pop(key)) for key in sorted(done)]
        self._deliver_groups(groups)

    def record_in_order(self) -> None:
        """In a capture, what earlier calls sent by callback is recorded before a value of a later call.

        A capture numbers each site's values as they are recorded, and holds
        callbacks' values until the end (see :meth:`arrived`); a call's values
        that reach Python at once would otherwise be numbered before those of
        the calls that ran before it (on a busy runtime, even with ``keep="last"``).
        """
        if self.recorder.holds_values and self.called_back:
            self.drain(final=True)

    def _deliver_groups(self, groups: list[tuple[tuple[float, int, bool], list[Parcel]]]) -> None:
        clock = self.recorder.clock
        for (step, _, trained), parcels in groups:
            parcel = parcels[0] if len(parcels) == 1 else jax.tree.map(lambda *xs: np.stack(xs), *parcels)
            self.deliver_stamped(trained, first_key(parcel), lambda step=step: clock.tagged(step), parcel)

    def drain(self, final: bool = False) -> None:
        """Hands over what callbacks left: all of it at the end of the block (``final``), else the steps done."""
        if final and self.called_back:
            jax.effects_barrier()  # host callbacks still in flight
        with self._groups_lock:
            if final:
                latest = None
            else:
                latest = max((step for step, _, _ in self._groups), default=None)
            done = [key for key in self._groups if latest is None or key[0] < latest]
            groups = [(key, self._groups.pop(key)) for key in sorted(done)]
            held, self._held = self._held, []
        self._deliver_groups(groups)
        for items in _calls_in_order([item for parcel in held for item in _items(parcel)]):
            self.delivered += 1
            self.recorder.deliver(Delivery(0, tuple(items)))


def first_key(parcel: Parcel) -> tuple[Any, ...]:
    """The site of a parcel's first value, which numbers a parcel that arrives on its own."""
    if parcel.labels:
        label = parcel.labels[0]
        return (label.path, label.var_type, label.name)
    site = parcel.tables[0].sites[0]
    return (site.path, site.var_type, site.name)


def _items(parcel: Parcel | None) -> list[Item]:
    """A parcel's values as the recorder takes them: a row packed in a table or a static value unpacked."""
    items: list[Item] = []
    if parcel is None:
        return items
    for label, value in zip(parcel.labels, parcel.values, strict=True):
        if label.form == STATIC:
            value = label.layout.value
        elif label.form == ROW:
            value = PackedRow(value, *label.layout)
        items.append(Item(label.path, label.var_type, label.name, label.index, label.order, value))
    return items


def _calls_in_order(items: list[Item]) -> list[list[Item]]:
    """Items that came back by callback, as calls, each sorted by when its values were sowed.

    The sows of one trace are numbered in order, so a call's items come
    with rising numbers, and the next call of the same program starts
    again below them.
    """
    calls: list[list[Item]] = []
    for item in items:
        if not calls or item.order <= calls[-1][-1].order and item.order <= min(i.order for i in calls[-1]):
            calls.append([item])
        else:
            calls[-1].append(item)
    return [sorted(call, key=lambda item: item.order) for call in calls]
