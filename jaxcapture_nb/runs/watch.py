"""watch(): a live view of a model's sowed values while a training loop runs.

How values leave an unchanged compiled step (``backends/README.md`` has the
whole story): inside the block the model's root module holds one exit, a
Variable that Flax carries into and out of every call that takes the model
in. When the step is traced, each ``sow`` hands its value to the trace;
the trace lays its small values out as one table, which leaves in the exit
beside a flag for each of its rows that holds a NaN or an Inf (see
``_step_table``); larger values are summarized in the step, together, one
summary program per distinct size, each summary packed in one small row.
As the call returns, the exit hands the table and the rows, still on the
device, to the stream, numbered by the stream's step clock. Nothing goes
back in but the step's number, so the step is traced and compiled once.
With ``every=N`` the summaries of large values sit in one ``lax.cond`` on
that number, so N-1 calls in N skip them on the device, and their tables
are dropped unread. The loop never waits: ten times a second, a background
thread summarizes the tables of the recorded steps whose rows the history
keeps (the others are replaced by the next step before anyone reads them,
and only their flags are read), fetches the rows of the steps the device
has finished, and refreshes the :class:`LiveView`. Hosts that do not show
widget updates sent from another thread (Google Colab:
https://github.com/googlecolab/colabtools/issues/3373) get the same
refresh from the loop's own thread instead, at ``w.log``/``w.update`` and
after each watched call, no more often.

Host callbacks are the way out of last resort: on the CPU a program with a
host callback runs synchronously, so the loop can no longer queue the next
step while the device runs this one. Gradients need them (a backward pass
has no state to carry them), so with ``grads=True`` the values, the
perturbed values and their gradients all travel by ``jax.debug.callback``,
and arrive in execution order; so do values sowed where no exit reaches (a
step made before the block, a loop over training steps, a ``cond`` branch).

In a ``jax.distributed`` run every process runs the same watch and records
the same rows: the rows are summaries of the global arrays, made in the
step (a step over several devices makes no tables), so the background
thread only fetches them (it never starts device work there, which every
process would have to start in the same order), and callbacks reach every
process (see ``hosts.host_callback``). Only process 0 shows the view, and
only process 0 writes the TensorBoard log of ``log_dir=`` (see
``_tensorboard``), which gets each row as it is recorded, on the thread
that fetched it.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import jax
from flax import nnx

from jaxcapture_nb.backends.nnx import NnxCapture
from jaxcapture_nb.capturing.capture import warn_what_was_lost
from jaxcapture_nb.capturing.recorder import Include, warn_if_nothing_perturbed
from jaxcapture_nb.core.display import view_of
from jaxcapture_nb.core.hosts import should_display
from jaxcapture_nb.runs.history import NonFiniteError
from jaxcapture_nb.runs.loop_input import first_step
from jaxcapture_nb.runs.publishing import publishing_thread, running_threads
from jaxcapture_nb.runs.run import Run
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.runs.tensorboard.writer import LogWriter, require
from jaxcapture_nb.stats.summary import DEFAULT_BINS

# The view's refresh period: at most ten updates a second.
PUBLISH_SECONDS = 0.1


# How often the displayed output is sent again while the loop runs, so that a
# notebook saved mid-run keeps a recent picture (its text/html). JupyterLab
# draws the widget anew for each such update and keeps the old view alive
# (JupyterLab 4.6.6's OutputArea hands the update to the widget renderer's
# ``renderModel``, which in jupyterlab_widgets 3.0.17 adds a new view and
# removes none), so the wait doubles after each one, up to the longest.
SAVED_OUTPUT_SECONDS = 5.0
SAVED_OUTPUT_MAX_SECONDS = 300.0


class Watch:
    """The object a ``with watch(...) as w:`` block gives; see :func:`watch`."""

    def __init__(
        self,
        model: nnx.Module | None,
        *,
        every: int,
        keep_steps: int,
        grads: bool,
        stop_on_nonfinite: bool,
        methods: bool,
        include: Include,
        bins: int,
        total: int | None,
        display: bool | None,
        publish: str = "auto",
        log_dir: str | os.PathLike[str] | None = None,
        steps: str = "auto",
        start_step: int | nnx.Optimizer = 0,
    ):
        if model is not None and not isinstance(model, nnx.Module):
            raise TypeError(
                f"watch() streams from a flax.nnx.Module, got {type(model).__name__}; for other "
                "code call watch() without a model and hand it summaries with w.update(step, summaries)"
            )
        if total is not None and (not isinstance(total, int) or total < 1):
            raise ValueError(f"total must be a positive number of steps, got {total!r}")
        self.model = model
        self.methods = methods
        self.include = include
        self.total = total
        self.stop_on_nonfinite = stop_on_nonfinite
        self._display = display
        self.publish_from = publishing_thread(publish)
        if log_dir is not None:
            require()  # on every process, which all run the same code
        self.log_dir = log_dir
        self._log: LogWriter | None = None
        self._published_at = -float("inf")
        self.start_step = first_step(start_step)
        self.stream = Stream(
            bins=bins,
            include=include,
            every=every,
            keep_steps=keep_steps,
            grads=grads,
            steps=steps,
            start_step=self.start_step,
        )
        self._view: Any = None
        self._view_lock = threading.Lock()
        self._entered = False
        self.overlays: list[Any] = []  # views of several runs that show this one too (overlay_runs)
        self._backend: NnxCapture | None = None
        self._publisher: threading.Thread | None = None
        self._stop = threading.Event()
        self._handle: Any = None
        self._saved_at = time.perf_counter()
        self._saved_every = SAVED_OUTPUT_SECONDS
        self._raised = False

    @property
    def view(self) -> Any:
        """The live widget (a ``LiveView``) of this watch; None before the block starts.

        It is made when first asked for: a watch that nobody shows (a
        script, ``display=False``, every process but the first) never
        imports the widget libraries.
        """
        with self._view_lock:
            if self._view is None and self._entered:
                self._view = view_of(Run("", self.stream, self), total=self.total)
                if self.stream.ended:
                    self._view.publish(final=True)
            return self._view

    def __enter__(self) -> Watch:
        self._entered = True
        if should_display(self._display):
            from IPython.display import display

            self._handle = display(self.view, display_id=True)
            self._saved_at = time.perf_counter()
        if self.log_dir is not None and jax.process_index() == 0:
            self._log = LogWriter(self.log_dir, resumed_at=self.start_step or None)
            self.stream.writers.append(self._log)
        if self.model is not None:
            self._backend = NnxCapture(self.model, (nnx.Intermediate,), self.stream, methods=self.methods)
            self._backend.install()
        if self.publish_from == "thread":
            self.stream.beating = True
            self._publisher = threading.Thread(target=self._publish, name="jaxcapture-watch", daemon=True)
            running_threads[self._publisher] = self._stop
            self._publisher.start()
        else:
            self.stream.after_call.append(self._publish_from_loop)
        return self

    def _publish(self) -> None:
        while not self._stop.wait(PUBLISH_SECONDS):
            self._refresh()

    def _refresh(self) -> None:
        """Reads the rows of the steps the device has finished, and sends them to the views and the saved output."""
        self.stream.settle(wait=False)
        for view in (self._view, *self.overlays):
            if view is not None:
                view.publish()
        self._refresh_saved_output()

    def _publish_from_loop(self) -> None:
        """Refreshes the view from the loop's thread, at most every PUBLISH_SECONDS.

        Only rows the device has finished are read, so the loop never waits.
        """
        now = time.perf_counter()
        if now - self._published_at < PUBLISH_SECONDS:
            return
        self._published_at = now
        self._refresh()

    def _refresh_saved_output(self) -> None:
        """Sends the displayed output again, with the fallback of now; see SAVED_OUTPUT_SECONDS.

        The view's mime bundle is computed afresh by the update, so the
        text/html a notebook file keeps shows the steps recorded so far;
        so do the views of several runs that show this one (overlay_runs).
        """
        if self._handle is None and not self.overlays:
            return
        now = time.perf_counter()
        if now - self._saved_at < self._saved_every:
            return
        self._saved_at = now
        self._saved_every = min(2 * self._saved_every, SAVED_OUTPUT_MAX_SECONDS)
        if self._handle is not None:
            self._handle.update(self.view)
        for view in self.overlays:
            view.refresh_saved_output()

    def log(self, step: int | None = None, **scalars: Any) -> None:
        """Records scalars such as the loss, without waiting for the device.

        Args:
          step: the training step; default, the number of steps seen so far.
          **scalars: name=value, each a number or an array of real numbers
            (an array of several logs their mean); device arrays are fine
            and are read later, off the loop's thread.

        Raises:
          TypeError: ``step`` is not a whole number, or a scalar is neither a
            number nor an array of numbers. Nothing is logged, and the watch
            goes on.
          NonFiniteError: with ``stop_on_nonfinite=True``, once a watched
            value has held a NaN or Inf.
        """
        self.stream.log(self.stream.steps_seen - 1 if step is None else step, scalars)
        if self._log is not None:
            self._log.report()  # a log that stopped says so while the loop runs
        if self.publish_from == "loop":
            self._publish_from_loop()
        self._check()

    def step(self) -> int:
        """Marks the end of a training step, for ``watch(..., steps="marked")``; returns the step that begins.

        A loop that makes several compiled calls per optimizer step
        (gradient accumulation: a gradient call per micro-batch, then an
        update) says where each step ends: everything the model sowed since
        the last mark is one step, and a site sowed several times in it is
        recorded as ``name``, ``name[1]``, ... (the micro-batches in order),
        so its rows line up with ``w.log(step=...)``.

        Raises:
          RuntimeError: the watch counts steps another way (``steps="auto"``, the default, or ``"calls"``).
        """
        return self.stream.clock.mark()

    def update(self, step: int, summaries: Any) -> None:
        """Records summaries made by :func:`~jaxcapture_nb.summarize` in your own step.

        Args:
          step: the training step.
          summaries: a pytree of :class:`~jaxcapture_nb.Summary` (device
            arrays are fine; they are fetched off the loop's thread).

        Raises:
          TypeError: ``step`` is not a whole number, or ``summaries`` holds
            something other than summaries or arrays. Nothing is recorded,
            and the watch goes on.
          NonFiniteError: as for :meth:`log`.
        """
        self.stream.update(step, summaries)
        if self.publish_from == "loop":
            self._publish_from_loop()
        self._check()

    def _check(self) -> None:
        if self.stop_on_nonfinite and not self._raised:
            # Stopping at the first NaN needs this step's rows now, which
            # waits for the step; without stop_on_nonfinite nothing waits.
            self.stream.settle()
        found = self.stream.first_nonfinite
        if self.stop_on_nonfinite and found is not None and not self._raised:
            self._raised = True
            raise NonFiniteError(*found)

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._stop.set()
        self.stream.beating = False
        if exc_type is not None:
            # The view says so rather than "done": the stop button, or an error in the loop.
            self.stream.end_reason = (
                "interrupted"
                if issubclass(exc_type, KeyboardInterrupt)
                else f"stopped by {exc_type.__name__}"
            )
        try:
            if self._backend is not None:
                self._backend.uninstall()  # waits for callbacks still in flight
        finally:
            if self._publisher is not None:
                self._publisher.join()
                running_threads.pop(self._publisher, None)
            else:
                self.stream.after_call.remove(self._publish_from_loop)
            self.stream.settle()
            self.stream.ended = True
            if self._log is not None:
                self._log.close()
            if self._view is not None:
                self._view.publish(final=True)
            for view in self.overlays:
                view.publish()
                view.refresh_saved_output()  # the final picture, as for the watch's own view
            if self._handle is not None:
                self._handle.update(self.view)  # the saved output gets the final picture
        if exc_type is None:
            warn_what_was_lost(self._backend)
            if self.stream.grads and self.model is not None:
                with self.stream.lock:
                    kinds = [kind for _, kind, _ in self.stream.series]
                warn_if_nothing_perturbed(kinds, self.include)
            self._check()
        return False

    def __repr__(self) -> str:
        return repr(self.view) if self._entered else "Watch(not started)"


def watch(
    model: nnx.Module | None = None,
    every: int = 1,
    keep_steps: int = 500,
    grads: bool = False,
    stop_on_nonfinite: bool = False,
    *,
    methods: bool = False,
    include: Include = None,
    bins: int = DEFAULT_BINS,
    total: int | None = None,
    display: bool | None = None,
    publish: str = "auto",
    log_dir: str | os.PathLike[str] | None = None,
    steps: str = "auto",
    start_step: int | nnx.Optimizer = 0,
) -> Watch:
    """Shows a live view of what ``model`` sows while a training loop runs.

    ::

        with watch(model, every=10, total=2_000) as w:
            for step in range(2_000):
                loss = train_step(model, optimizer, batch)  # an unchanged @nnx.jit step
                w.log(step=step, loss=loss)                  # optional scalars

    Summaries are computed inside the compiled step, on the device, and
    only their small rows reach the host, fetched off the loop's thread: the
    step is traced and compiled once, steps that ``every`` does not record
    skip the summaries on the device, and the loop never waits for the host
    or the browser. ``grads=True`` sends values by host callback instead, which on
    a CPU makes each call wait for its step. Without a model, hand the view
    your own summaries with ``w.update(step, tree)``.

    Args:
      model: the ``flax.nnx.Module`` whose sows to stream, or None.
      every: record one step in ``every``: a compiled step that takes the
        model in summarizes on calls 0, every, 2*every, ... only. Values
        sowed outside one (eager calls, a step over a submodule) are thinned
        per site, one value in ``every``.
      keep_steps: recorded steps kept per site (older ones are thinned).
      grads: also record, for every value passed to ``Module.perturb``, the
        gradient that reaches it in the step's backward pass. A block in
        which no value passed through ``Module.perturb`` warns, as it
        recorded no gradient.
      stop_on_nonfinite: raise :class:`NonFiniteError` naming the first site
        or logged scalar and step that held a NaN or Inf, at the next ``w.log``/``w.update``
        or when the block ends. The model stays usable. Each ``w.log`` and
        ``w.update`` then waits for the step's summaries.
      methods: also stream the output of every submodule's method calls
        (as :func:`~jaxcapture_nb.capture` does with ``methods=True``).
      include: keep only sites whose dotted path matches this regex.
      bins: histogram bins.
      total: the number of steps planned, for the progress line's ETA.
      display: display the :class:`LiveView`: True or False, or None (the
        default) to display it only in a notebook front end (an IPython
        kernel, or marimo) and there only on process 0 of a
        ``jax.distributed`` run, whose processes all record the same rows.
        In a plain ``python`` process nothing is shown or printed.
      publish: which thread sends the view's updates, ten times a second
        at most: ``"thread"``, a background thread, so the view moves even
        while a long step runs; ``"loop"``, the training loop's own thread,
        at ``w.log``/``w.update`` and after each watched call, for hosts
        that do not show updates sent from other threads; or ``"auto"``
        (the default): ``"loop"`` in Google Colab, ``"thread"`` elsewhere.
      log_dir: also write the run to TensorBoard event files in this
        directory while it runs (``tensorboard --logdir`` reads them, and
        :func:`~jaxcapture_nb.open_run` opens them again): every recorded
        histogram with its exact edges and counts, the statistics and the
        ``w.log`` scalars, at their steps, thinned by ``every`` as the view
        is. A thread of its own writes them as they come, to an event file
        of the watch's own; a full disk ends the log with a warning, not
        the training. Only process 0 of a ``jax.distributed`` run writes.
        Needs ``pip install tensorboardX tensorboard crc32c``.
      steps: what one training step is. ``"auto"`` (the default): a call
        that differentiates the model (its parameters are traced by
        ``grad``: a training step, however it is written); the values of
        any other call that sows (an evaluation step, validation through
        ``nnx.view``, a forward pass for logging, another model's step that
        calls this one) are an evaluation, recorded apart as sites of kind
        "evaluation" at the latest training step, each site keeping the
        first evaluation of a step; before the first training step,
        evaluations are numbered 0, 1, 2, ... by themselves. ``"calls"``:
        each compiled call that takes the model in and sows (a call that
        scans several steps, ``nnx.scan`` over batches with the model in
        the carry, records each), an eager call of the model a step of its
        own. ``"marked"``: the loop ends each step with :meth:`Watch.step`
        (gradient accumulation over several compiled calls).
      start_step: the number of the first training step, for a run resumed
        from a checkpoint: a whole number, or the restored
        ``nnx.Optimizer``, whose count of updates it reads. With ``log_dir``
        holding the run's earlier part, the log goes on from that step, and
        :func:`~jaxcapture_nb.open_run` and TensorBoard read the folder as
        one run, dropping what the earlier part logged from that step on
        (as TensorBoard does after a restart).

    Returns:
      A :class:`Watch`; ``w.view`` is the widget, ``w.stream`` the history.

    Raises:
      ImportError: ``log_dir`` was given and tensorboardX is not installed.
    """
    return Watch(
        model,
        every=every,
        keep_steps=keep_steps,
        grads=grads,
        stop_on_nonfinite=stop_on_nonfinite,
        methods=methods,
        include=include,
        bins=bins,
        total=total,
        display=display,
        publish=publish,
        log_dir=log_dir,
        steps=steps,
        start_step=start_step,
    )
