"""Which thread sends a watch's view its updates, and the publishing threads still running.

A daemon thread that is inside JAX when Python finalizes is ended from
within C++ frames, which aborts the process, so each publishing thread is
registered here and stopped before the interpreter exits.
"""

from __future__ import annotations

import atexit
import sys
import threading

PUBLISH_MODES = ("auto", "thread", "loop")


# Publishing threads still running: a script that leaves a watch open (or
# ends with an exception inside one) must still exit cleanly.
running_threads: dict[threading.Thread, threading.Event] = {}


@atexit.register
def _stop_running() -> None:
    for thread, stop in list(running_threads.items()):
        stop.set()
        thread.join()
    running_threads.clear()


def publishing_thread(publish: str) -> str:
    """Which thread sends the view's updates: ``"thread"`` or ``"loop"``.

    ``"auto"`` chooses the loop's own thread where the host does not show
    widget updates sent from other threads: Google Colab renders none of
    them (https://github.com/googlecolab/colabtools/issues/3373).

    Args:
      publish: ``"auto"``, ``"thread"`` or ``"loop"``, as ``watch(publish=)`` takes it.

    Raises:
      ValueError: any other value.

    Example:
      >>> publishing_thread("loop"), publishing_thread("thread")
      ('loop', 'thread')
    """
    if publish not in PUBLISH_MODES:
        raise ValueError(f"publish must be one of {PUBLISH_MODES}, got {publish!r}")
    if publish == "auto":
        return "loop" if "google.colab" in sys.modules else "thread"
    return publish
