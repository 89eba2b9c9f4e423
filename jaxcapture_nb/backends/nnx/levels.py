"""Level: what one running trace has collected for a capture, and how it leaves.

Every value sowed inside a trace must leave it, and only the trace's own
outputs can carry it. A level knows the way out of its trace:

* ``"root"``: the model's exit (see ``exits``) came into the trace with
  the model, through ``nnx.jit``, ``jax.jit`` over its state or any Flax
  transform, and goes out with it; the level's values leave inside it as
  one parcel. Under a loop or a branch, whose output must keep the
  structure of its input, the parcel leaves by host callback instead.
* ``"lazy"``: only a submodule came into the trace (``nnx.scan`` over
  stacked layers, ``nnx.remat`` of one block): the first module that sows
  takes an exit of its own, which the Flax transform carries out to the
  level around it as it carries any new Variable (stacked by ``scan``),
  where it is taken apart again. The model never holds it.
* ``"callback"``: neither: each value leaves by host callback.

Values sowed under ``grad`` or ``vmap``, which stage nothing, are taken
out to the trace around them first (see ``jax_internals.lifted``), so they need
no way of their own.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax

from jaxcapture_nb.backends.nnx import callbacks
from jaxcapture_nb.backends.nnx.parcel import Entry, Parcel, pack
from jaxcapture_nb.core.protocols import SiteRecorder
from jaxcapture_nb.upstream.jax_internals import (
    BRANCHES,
    LOOPS,
    current_trace,
    is_evaluation,
    liftable,
    parent_of,
    traced_for,
    tracing,
    usable_here,
)

ROOT, LAZY, CALLBACK = "root", "lazy", "callback"

_serials = itertools.count(1)


class Level:
    """The values a capture collected in one staged trace.

    Attributes:
      trace: the JAX trace.
      kind: ``"loop"`` (a loop body: its outputs keep their inputs'
        structure), ``"branch"`` (a ``cond``/``switch`` branch, likewise),
        or ``"staged"``.
      way: how its values leave: ROOT, LAZY, CALLBACK, or None until the
        first value decides.
      step: the step number the trace runs in (a tracer usable here), or None.
      gate: whether that step is recorded (a traced bool), or None to summarize always.
      counts: values each site sowed here so far: the next one's index.
      sowed: whether anything was sowed here or below (a parcel, or a callback).
      scanned: whether the model's exit went through a loop of training steps below.
      trained: whether the model was differentiated here or below: the call is a
        training step, not an evaluation (see ``jax_internals.differentiated``).
      serial: names the level in the parcels it packs.
      around: the serials of this level and of the levels around it: a parcel
        packed by one of them that comes back here only passed through.
    """

    def __init__(self, trace: Any, step: Any, gate: Any, outer: frozenset[int] = frozenset()):
        self.trace = trace
        self.serial = next(_serials)
        self.around = outer | {self.serial}
        made_for = traced_for(trace) or ""
        self.kind = "loop" if made_for in LOOPS else "branch" if made_for in BRANCHES else "staged"
        # Set by Levels.of: no staged trace is around this one, and it is
        # not a Flax transform's.
        self.outermost_jit = False
        # Set by Levels.of: a loop's trace is around this one, which stacks what leaves it.
        self.in_loop = False
        self.way: str | None = None
        self.step, self.gate = step, gate
        self.own_step = False  # whether ``step`` is the model's own here, not one from around
        self.step_leaf: Any = None  # the exit's step leaf ``step`` was read from (one lane per member)
        self.next_step: Any = None  # in a loop that carries the model: the step its next pass has
        self.fresh: dict[int, Any] = {}  # copies of the step this level handed out (see exits.fresh)
        self.counts: dict[tuple[Any, ...], int] = {}
        self.entries: list[Entry] = []
        self.parcels: list[Parcel] = []
        self.sowed = False
        self.scanned = False
        self.trained = False
        self._version = 0
        self._packed: tuple[tuple[int, bool], Parcel] | None = None
        self._absorbed: list[Any] = []  # the first array of each parcel taken
        self.flushed = 0  # the version last sent by callback

    @property
    def version(self) -> int:
        return self._version

    @property
    def hands_out_arrays(self) -> bool:
        """Whether a capture may get this trace's large values as they are, through the model's exit (see ``parcel.pack``).

        So in a staged trace that no loop stacks, on one device: a value
        split over several is summarized in the step, where each part lies.
        """
        return self.kind == "staged" and not self.in_loop and jax.device_count() == 1

    @property
    def sends(self) -> bool:
        """Whether the values leave by callback as they come: no exit carries them, or its exit must keep its structure."""
        return self.way == CALLBACK or (self.way == ROOT and self.kind != "staged")

    def place(self, key: tuple[Any, ...]) -> int:
        """The index of the next value of site ``key`` here (0 for its first), counted."""
        index = self.counts.get(key, 0)
        self.counts[key] = index + 1
        return index

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.sowed = True
        self._version += 1

    def absorb(self, parcel: Parcel) -> None:
        """Takes a parcel that came out of a trace inside this one; its values are numbered after this trace's.

        JAX and Flax may rebuild a transform's outputs more than once: a
        parcel already taken (the same arrays) is taken once.
        """
        leaves = jax.tree.leaves(parcel)
        if not leaves or any(leaves[0] is taken for taken in self._absorbed):
            return
        self._absorbed.append(leaves[0])
        self.parcels.append(parcel.renumbered(self.counts))
        self.sowed = True
        self._version += 1

    def parcel(self, recorder: SiteRecorder, arrays_out: bool = False) -> Parcel:
        """Everything collected here, packed once per change (a trace may flatten its exit several times).

        ``arrays_out``: the parcel leaves through the model's exit, so a
        capture may get large values as they are (see ``parcel.pack``).
        """
        if self._packed is None or self._packed[0] != (self._version, arrays_out):
            packed = pack(self.entries, recorder, self.gate, arrays_out=arrays_out)
            for parcel in self.parcels:
                packed = packed + parcel
            self._packed = ((self._version, arrays_out), packed)
        return self._packed[1]

    def take_unsent(self, recorder: SiteRecorder) -> Parcel | None:
        """What a callback has not sent yet, packed; marks it sent. None if nothing is new."""
        if self.flushed == self._version:
            return None
        parcel = self.parcel(recorder)
        self.flushed = self._version
        self.entries, self.parcels = [], []
        self._packed = None
        self._version += 1
        self.flushed = self._version
        return parcel


# What the traces of Flax transforms that carry new state out are made for,
# besides jit (``jax_internals.traced_for``).
FLAX_TRANSFORMS = frozenset({*LOOPS, "checkpoint / remat"})


class Levels:
    """The levels of the staged traces a capture has seen values in, each made when first asked for.

    Kept while the traces run; :meth:`clear` forgets them once every trace has ended.
    """

    def __init__(self) -> None:
        self._by_trace: dict[int, Level] = {}

    def clear(self) -> None:
        self._by_trace = {}

    def of(self, trace: Any) -> Level:
        """The level of a staged trace, made the first time it is asked for."""
        level = self._by_trace.get(id(trace))
        if level is not None and level.trace is trace:
            return level
        step = gate = None
        around: frozenset[int] = frozenset()
        outermost = True
        for outer in _outer_traces(trace):
            if is_evaluation(outer):
                break
            found = self._by_trace.get(id(outer))
            if found is not None and found.trace is outer:
                around |= found.around
                if step is None and usable_here(found.step):
                    step, gate = found.step, found.gate
            if traced_for(outer) is not None:
                outermost = False
        level = Level(trace, step, gate, around)
        # A lazy exit of an outermost jit would reach the state a jax.jit step
        # returns, or a cached_partial's fixed graph; one of a Flax transform
        # called from eager code reaches the model, which does not keep it.
        level.outermost_jit = outermost and traced_for(trace) not in FLAX_TRANSFORMS
        level.in_loop = any(traced_for(outer) in LOOPS for outer in _outer_traces(trace))
        self._by_trace[id(trace)] = level
        return level

    def parent(self, level: Level) -> Level | None:
        """The level of the staged trace around ``level``'s; None at the outermost."""
        outer = parent_of(level.trace)
        while outer is not None and not is_evaluation(outer):
            if traced_for(outer) is not None:
                return self.of(outer)
            outer = parent_of(outer)
        return None

    def note_trained(self, level: Level | None) -> None:
        """Notes that the model is differentiated in this trace: the call around it is a training step."""
        while level is not None:
            level.trained = True
            level = self.parent(level)

    def note_callback(self, level: Level | None) -> None:
        """Notes that values of this trace leave by callback: the call that runs it sows."""
        while level is not None:
            level.sowed = True
            level = self.parent(level)

    def send(self, level: Level, route: int, parcel: Parcel) -> None:
        """Sends a level's parcel to the capture of ``route`` by callback, tagged with its step.

        A loop that took the model in tags each pass with the step the
        model carries, which moves on with each pass (see ``NnxCapture.flatten_exit``).
        """
        passes = level.kind == "loop" and level.way == ROOT
        callbacks.send(route, parcel, level.step, "passes" if passes else "stacked", level.trained)
        self.note_callback(level)

    def send_unsent(self, level: Level, route: int, recorder: SiteRecorder) -> None:
        """Sends what the level collected since it last sent, if anything."""
        parcel = level.take_unsent(recorder)
        if parcel:
            self.send(level, route, parcel)

    def staged(self) -> Level | None:
        """The level of the staged trace that runs now, past ``grad`` and ``vmap``; None outside a trace."""
        trace = current_trace() if tracing() else None
        while trace is not None and liftable(trace):
            trace = parent_of(trace)
        return None if trace is None or is_evaluation(trace) else self.of(trace)

    def around_staged(self, trace: Any) -> frozenset[int]:
        """The serials of the staged levels around ``grad``'s or ``vmap``'s ``trace`` (none outside a staged trace)."""
        while liftable(trace):
            trace = parent_of(trace)
        if trace is None or is_evaluation(trace):
            return frozenset()
        return self.of(trace).around


def _outer_traces(trace: Any) -> list[Any]:
    """The traces around ``trace``, innermost first."""
    found, outer = [], parent_of(trace)
    while outer is not None:
        found.append(outer)
        outer = parent_of(outer)
    return found
