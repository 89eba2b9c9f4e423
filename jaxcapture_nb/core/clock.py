"""StepClock: the one place that numbers the training steps values belong to.

A backend asks the clock, and nothing else, which step a value is recorded
at: the step a compiled call starting now belongs to (its gate for
``every=N`` and the tag of its host callbacks), the step of a call whose
values came back, and the step of a value that arrives on its own (an eager
call's, or a host callback's without a tag). The recorder records at the
step it is told. Three ways of counting:

* ``"auto"`` (the default): a training step is a call that differentiates
  the model (its parameters are traced by ``grad``; see
  ``jax_internals.differentiated``), so each training step is one step, however
  many other calls the loop makes. A call that does not (an evaluation
  step, validation through ``nnx.view``, a forward pass for logging, a
  second model's step that calls this one) is an evaluation: its values
  are recorded apart, at the latest training step (the step a loop that
  logs ``w.log(step=step)`` after its training call gives it). Before the
  first training step, evaluations are numbered by themselves, so a watch
  over forward passes alone numbers them 0, 1, 2, ...
* ``"calls"``: each compiled call of the watched model that sows is one
  step, an eager call of the model is a step of its own, and a call that
  scans several training steps records each as its own step.
* ``"marked"``: the training loop says where a step ends (``Watch.step()``),
  for loops that make several compiled calls per optimizer step (gradient
  accumulation): everything sowed between two marks is one step, and a site
  sowed several times in it is recorded as ``name``, ``name[1]``, ...

A run resumed from a checkpoint starts at ``start``: the first training
step is numbered ``start``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, NamedTuple

import numpy as np

STEP_MODES = ("auto", "calls", "marked")

# A step reaches the device as a float32, exact up to 2**24: a model's state
# may be differentiated whole (tree-mode ``nnx.grad``), which takes floats
# only. So it goes as its remainder modulo a period below that (a multiple
# of ``every``, so that the device's gate is exact), and the host takes a
# step that comes back to the one nearest the steps it has counted.
_EXACT = 2**24


class Evaluation(NamedTuple):
    """Where an evaluation's values go (see :meth:`StepClock.evaluation`).

    Attributes:
      step: the training step it is shown at.
      gate: the step whose number decides whether ``every`` records it:
        the one a compiled evaluation took in, which its summaries were
        gated on, on the device.
    """

    step: int
    gate: int


class StepClock:
    """Numbers steps; thread-safe, since host callbacks arrive on the runtime's threads.

    Args:
      mode: ``"auto"``, ``"calls"`` or ``"marked"`` (see the module doc).
      every: the recorder records one step in ``every``: the period of the
        steps the device sees is a multiple of it.
      start: the number of the first step (a run resumed from a checkpoint),
        as the watch checked it (``watch.first_step``).

    Example:
      >>> clock = StepClock()
      >>> clock.entry(), clock.call(), clock.entry()
      (0, 0, 1)
      >>> [clock.single("h"), clock.single("o"), clock.single("h")]
      [1, 1, 2]
      >>> marked = StepClock("marked")
      >>> marked.call(), marked.call(), marked.mark(), marked.call()
      (0, 0, 1, 1)

      Counting training steps, an evaluation is recorded at the latest one:

      >>> auto = StepClock("auto", start=100)
      >>> auto.evaluation(False, "h"), auto.evaluation(True, "h"), auto.call(), auto.call()
      (Evaluation(step=100, gate=100), None, 100, 101)
      >>> auto.evaluation(False, "h").step, auto.evaluation(False, "h").step
      (101, 101)
    """

    def __init__(self, mode: str = "calls", every: int = 1, start: int = 0):
        if mode not in STEP_MODES:
            raise ValueError(f"steps must be one of {STEP_MODES}, got {mode!r}")
        self.mode = mode
        self.period = every * (_EXACT // every)
        self.start = start
        self._lock = threading.Lock()
        self._next = start  # the step the next compiled call gets
        self._entered = start  # the step the last call that took the model in began at
        # Counting training steps: whether one was seen, and the evaluations
        # before it, numbered by themselves (see evaluation()).
        self._trained = False
        self._evaluations = 0
        self._evaluation_seen: set[Hashable] = set()
        # The step values arriving one by one are recorded at, and the keys
        # already seen in it: a key seen again starts the next step.
        self._single_step: int | None = None
        self._single_seen: set[Hashable] = set()
        # A compiled call that scanned its steps: the device array holding
        # the step after its last, read once the next step is asked for.
        self._scanned_until: Any = None
        self._seen = 0  # past the latest step values or scalars arrived at (see saw)

    @property
    def marked(self) -> bool:
        return self.mode == "marked"

    def entry(self) -> int:
        """The step a compiled call that starts now belongs to (its first, if it scans several)."""
        with self._lock:
            self._settle_scanned()
            self._entered = self._next
            return self._next

    def on_device(self, step: int) -> float:
        """How a step goes to the device (see ``_EXACT``).

        Example:
          >>> clock = StepClock(every=10)
          >>> clock.on_device(3), clock.on_device(clock.period + 3), clock.from_device(3.0)
          (3.0, 3.0, 3)
        """
        return float(step % self.period)

    def from_device(self, tag: Any) -> int:
        """The step a value from the device (see :meth:`on_device`) stands for: the nearest to the steps counted."""
        tag = int(np.asarray(tag).reshape(-1)[0])  # a step leaf of one lane per ensemble member
        near = self._next
        return near + (tag - near + self.period // 2) % self.period - self.period // 2

    def evaluation(self, trained: bool, key: Hashable = None) -> Evaluation | None:
        """Where an evaluation's values are recorded; None when they belong to a training step.

        Counting training steps (``"auto"``), a call that did not
        differentiate the model is an evaluation, shown at the latest
        training step. Before the first, evaluations are numbered by
        themselves: a ``key`` (a site) seen again starts the next, as
        :meth:`single` counts eager calls; a compiled call's values come
        back together, with no key, and are one evaluation each. An
        evaluation moves no training step on, so the step a compiled
        evaluation takes in is the next training step's.

        Args:
          trained: whether the call differentiated the model.
          key: the site of a value that arrives on its own, or None for a
            compiled call's values.
        """
        if self.mode != "auto" or trained:
            return None
        with self._lock:
            self._settle_scanned()
            if self._trained:
                return Evaluation(max(self._next - 1, self.start), self._next)
            if key is not None and self._evaluation_seen and key not in self._evaluation_seen:
                self._evaluation_seen.add(key)  # one more value of the evaluation under way
            else:
                self._evaluation_seen = {key} if key is not None else set()
                self._evaluations += 1
            step = self.start + self._evaluations - 1
            return Evaluation(step, step)

    def call(self) -> int:
        """A compiled call's values came back: its step (the one it took in). Moves on past it when counting calls."""
        with self._lock:
            self._settle_scanned()
            self._trained = True
            if self.marked:
                return self._next
            step = self._entered
            self._next = max(self._next, step + 1)
            self._entered = self._next
            self._single_step = None
            return step

    def scanned(self, first: int, after_last: Any) -> None:
        """A compiled call scanned steps from ``first`` on; ``after_last`` (a device array) is the step after them.

        Its steps are tagged on the device, so the host learns how many
        there were only when the array is read: the next :meth:`entry`
        reads it, which waits for that call if it is still running.
        """
        with self._lock:
            if not self.marked:
                self._next = max(self._next, first + 1)
                self._scanned_until = after_last
                self._single_step = None

    def _settle_scanned(self) -> None:
        if self._scanned_until is not None:
            after_last, self._scanned_until = self._scanned_until, None
            self._next = max(self._next, self.from_device(after_last))

    def tagged(self, tag: Any) -> int:
        """A value that came with its step as the device saw it (a host callback): that step, noted as seen."""
        with self._lock:
            self._trained = True  # asked only for a training step's values (see evaluation())
            step = self.from_device(tag)
            if not self.marked:
                self._next = max(self._next, step + 1)
            return step if not self.marked else self._next

    def single(self, key: Hashable) -> int:
        """The step of a value that arrives on its own (eager, or a callback without a step).

        Values arriving one by one share a step until a ``key`` (a site)
        comes again, which starts the next: an eager call of the model is
        one step, each site recorded once in it.
        """
        with self._lock:
            self._settle_scanned()
            self._trained = True  # asked only for a training step's values (see evaluation())
            if self.marked:
                return self._next
            if self._single_step is None or key in self._single_seen:
                self._single_step, self._single_seen = self._next, set()
                self._next += 1
            self._single_seen.add(key)
            return self._single_step

    def mark(self) -> int:
        """Ends the current step (``"marked"`` mode); returns the step that starts.

        Raises:
          RuntimeError: the clock counts calls.
        """
        if not self.marked:
            raise RuntimeError(
                "Watch.step() marks where a training step ends, which needs watch(..., steps='marked'); "
                "by default each compiled call of the model is one step"
            )
        with self._lock:
            self._next += 1
            return self._next

    def saw(self, step: int) -> None:
        """Notes that something arrived at ``step``: values, a scalar the loop logged, a step of a run read back.

        The loop may give steps of its own (``w.log(step=...)``,
        ``w.update(step, ...)``) and a run read from its log has no calls to
        count: :attr:`steps_seen` counts these too.

        Example:
          >>> clock = StepClock()
          >>> clock.saw(41)
          >>> clock.steps_seen
          42
        """
        with self._lock:
            self._seen = max(self._seen, step + 1)

    @property
    def steps_seen(self) -> int:
        """Steps begun so far, and any step something arrived at (see :meth:`saw`); does not wait for a scanning call."""
        with self._lock:
            # Counting calls, the next step has not begun; between marks, it has.
            return max(self._next + 1 if self.marked else self._next, self._seen)


class StepPace:
    """How fast steps go, from the first step seen to the latest, as a progress line reports it.

    The time before the first step (the step's compile) is left out, so a
    run's rate and its ETA read the same live as reopened from its log,
    where the events' wall times span the first step to the last.

    Example:
      >>> pace = StepPace()
      >>> pace.note(1, 10.0); pace.note(5, 11.0); pace.note(5, 30.0)
      >>> pace.rate, pace.eta(9)
      (4.0, 1.0)
    """

    def __init__(self) -> None:
        self.first: tuple[int, float] | None = None  # (steps seen, when)
        self.last: tuple[int, float] | None = None

    def note(self, seen: int, when: float) -> None:
        """Notes ``seen`` steps at time ``when``; the time moves on only as the count does."""
        if seen <= 0:
            return
        if self.first is None or self.last is None:
            self.first = self.last = (seen, when)
        elif seen > self.last[0]:
            self.last = (seen, when)

    @property
    def rate(self) -> float:
        """Steps a second since the first step; 0 before two have been seen."""
        first, last = self.first, self.last
        if first is None or last is None or last[1] <= first[1]:
            return 0.0
        return (last[0] - first[0]) / (last[1] - first[1])

    def eta(self, total: int | None) -> float | None:
        """Seconds until ``total`` steps at the current rate; None without a total or a rate."""
        last, rate = self.last, self.rate
        if not total or not rate or last is None or last[0] >= total:
            return None
        return (total - last[0]) / rate
