"""Who shows views, and reading device values on the host (multi-process runs: test_multiprocess.py)."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from training import source_text

from jaxcapture_nb import summarize, watch
from jaxcapture_nb.core.hosts import has_front_end, readable, should_display, to_host


class ReluLayer(nnx.Module):
    """A 4-to-8 dense layer with a ReLU that sows its output as ``h``."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.linear(x))
        self.sow(nnx.Intermediate, "h", h)
        return h


@pytest.fixture
def shown(monkeypatch):
    """What watch() hands to IPython's display()."""
    shown = []

    class Handle:
        def update(self, view):
            shown.append(("update", view))

    def display(view, display_id=False):
        shown.append(("display", view))
        return Handle()

    monkeypatch.setattr("IPython.display.display", display)
    return shown


def test_a_plain_process_has_no_front_end_and_displays_nothing_by_default():
    assert not has_front_end()  # pytest: no kernel, no marimo
    assert not should_display(None)
    assert should_display(True) and not should_display(False)


def test_by_default_only_process_0_of_a_notebook_displays(monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: True)
    assert should_display(None)
    monkeypatch.setattr("jax.process_index", lambda: 1)
    assert not should_display(None)
    assert should_display(True)  # asked for explicitly


def test_an_ipython_kernel_or_marimo_is_a_front_end(monkeypatch):
    class Shell:
        kernel = object()

    monkeypatch.setattr("IPython.get_ipython", lambda: Shell())
    assert has_front_end()
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    assert not has_front_end()
    marimo = type(sys)("marimo")
    marimo.running_in_notebook = lambda: True
    monkeypatch.setitem(sys.modules, "marimo", marimo)
    assert has_front_end()


@pytest.mark.parametrize(
    ("front_end", "process", "display", "expected"),
    [
        (True, 0, None, True),
        (True, 1, None, False),
        (False, 0, None, False),
        (False, 0, True, True),
        (True, 0, False, False),
    ],
)
def test_watch_displays_its_view_by_the_auto_rule(shown, monkeypatch, front_end, process, display, expected):
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: front_end)
    monkeypatch.setattr("jax.process_index", lambda: process)
    model = ReluLayer(nnx.Rngs(0))
    with watch(model, display=display) as w:
        model(jnp.ones((2, 4)))
    # Displayed once, and the saved output gets the final picture.
    assert shown == ([("display", w.view), ("update", w.view)] if expected else [])


# A model for the scripts below, which each run in a plain Python process.
NET = (
    """
import jax.numpy as jnp
from flax import nnx

"""
    + source_text(ReluLayer)
    + """
model = ReluLayer(nnx.Rngs(0))
step = nnx.jit(lambda model, x: model(x).sum())
"""
)


def run_plain_python(script: str, cwd) -> tuple[int, str, str]:
    """The exit status, standard output and standard error of ``NET`` and then ``script`` in a new process."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", NET + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


def test_watch_in_a_plain_python_process_prints_nothing(tmp_path):
    script = """
        from jaxcapture_nb import summarize, watch

        with watch(model, total=5) as w:
            for i in range(5):
                w.log(step=i, loss=step(model, jnp.ones((2, 4))))
                model(jnp.ones((2, 4)))
        with watch() as w:
            w.update(0, summarize({"x": jnp.arange(4.0)}))
            w.update(1, {"x": jnp.arange(4.0)})
        assert w.stream.series[("update", "x")].size == 2
        """
    assert run_plain_python(script, tmp_path) == (0, "", "")


def test_a_script_that_ends_with_a_watch_open_exits_cleanly(tmp_path):
    """The publishing thread is stopped before Python finalizes: ended inside JAX, it would abort the process."""
    script = """
        import threading

        from jaxcapture_nb import watch
        from jaxcapture_nb.runs.stream import Stream

        busy = threading.Event()
        settle = Stream.settle

        def settle_in_and_out_of_jax(self, wait=True):
            # The publishing thread keeps going in and out of JAX, which lets
            # go of Python's lock while the device computes, as the script ends.
            if threading.current_thread().name == "jaxcapture-watch":
                busy.set()
                x = jnp.ones((200, 200))
                for _ in range(5000):
                    x = jnp.tanh(x @ x / 200).block_until_ready()
            settle(self, wait)

        Stream.settle = settle_in_and_out_of_jax
        w = watch(model, display=False, publish="thread").__enter__()
        step(model, jnp.ones((2, 4)))
        busy.wait()
        """
    assert run_plain_python(script, tmp_path) == (0, "", "")


def test_values_this_process_holds_are_read_as_they_are():
    x = jnp.arange(6.0).reshape(2, 3)
    assert readable(x) and readable(np.ones(2)) and readable(3)
    np.testing.assert_array_equal(to_host(x), np.arange(6.0).reshape(2, 3))
    on_device = jax.jit(summarize)(x)
    on_host = on_device.to_numpy()
    assert isinstance(on_host.counts, np.ndarray) and isinstance(on_host.stats, np.ndarray)
    assert float(on_host.mean) == 2.5 and on_host.shape == (2, 3)
    assert on_host.to_numpy() is on_host  # already on the host
