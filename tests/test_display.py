"""Where views are shown by default: in notebook front ends, never in scripts or terminal IPython."""

import base64
import subprocess
import sys
import textwrap

import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb import read_run, watch
from jaxcapture_nb.core.hosts import has_front_end, should_display
from jaxcapture_nb.runs.watch import SAVED_OUTPUT_MAX_SECONDS, SAVED_OUTPUT_SECONDS
from jaxcapture_nb.views.live_static import live_html, live_text

TRAINING = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    from flax import nnx
    from jaxcapture_nb import capture, watch

    class SquaredLinear(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            h = self.linear(x)
            self.sow(nnx.Intermediate, "hidden", h)
            return jnp.mean(h**2)

    @nnx.jit
    def train_step(model, x):
        loss, grads = nnx.value_and_grad(lambda m: m(x))(model)
        params = nnx.state(model, nnx.Param)
        nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
        return loss

    model = SquaredLinear(nnx.Rngs(0))
    x = jnp.ones((2, 4))
    with watch(model, total=4{display}) as w:
        for step in range(4):
            w.log(step=step, loss=train_step(model, x))
    with capture(model) as cap:
        model(x)
    assert w.stream.steps_seen == 4 and len(cap.records) == 1
    """
)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


def test_watch_and_capture_in_a_script_print_nothing():
    result = run_python(TRAINING.format(display=""))
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


def test_print_of_a_capture_in_a_script_prints_its_table():
    result = run_python(TRAINING.format(display="") + "print(cap)\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["path", "name", "call"]
    assert lines[1].split()[:2] == ["(root)", "hidden"] and len(lines) == 2
    assert result.stderr == ""


def test_display_true_in_a_script_still_displays():
    result = run_python(TRAINING.format(display=", display=True"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("LiveView:")  # IPython's display() prints text outside a notebook


def test_a_terminal_ipython_shows_nothing():
    code = (
        "from IPython.terminal.interactiveshell import TerminalInteractiveShell\n"
        "from jaxcapture_nb.core.hosts import has_front_end\n"
        "shell = TerminalInteractiveShell.instance()\n"
        "assert not has_front_end()\n"
        f"result = shell.run_cell({TRAINING.format(display='')!r})\n"
        "result.raise_error()\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


def test_a_kernel_shell_is_a_front_end(monkeypatch):
    class ZMQInteractiveShell:  # what ipykernel runs: it has a kernel
        kernel = object()

    assert not has_front_end() and not should_display(None)
    monkeypatch.setattr("IPython.get_ipython", lambda: ZMQInteractiveShell())
    assert has_front_end() and should_display(None) and not should_display(False)


def test_marimo_is_asked_only_once_it_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "marimo", raising=False)
    assert not has_front_end()
    assert "marimo" not in sys.modules  # asking did not import it
    marimo = type(sys)("marimo")
    marimo.running_in_notebook = lambda: False  # a marimo script run with python
    monkeypatch.setitem(sys.modules, "marimo", marimo)
    assert not has_front_end()
    marimo.running_in_notebook = lambda: True
    assert has_front_end()


# -- what a saved notebook keeps of a LiveView --------------------------------------


class Recorder:
    """A display publisher that keeps every output IPython sends: (text/html, whether an update)."""

    def __init__(self):
        self.outputs: list[tuple[str, bool]] = []

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        self.outputs.append((data.get("text/html", ""), update))

    def clear_output(self, wait=False):
        pass


class Sowing(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "hidden", h)
        return h.sum()


def test_a_notebook_saved_mid_run_keeps_a_recent_picture(ipython, monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(ipython, "display_pub", recorder)
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: True)
    monkeypatch.setattr("jaxcapture_nb.runs.watch.PUBLISH_SECONDS", 0.0)
    monkeypatch.setattr("jaxcapture_nb.runs.watch.SAVED_OUTPUT_SECONDS", 0.0)
    model = Sowing(nnx.Rngs(0))
    step = nnx.jit(lambda m, x: m(x))
    with watch(model, publish="loop") as w:
        assert recorder.outputs[-1] == (recorder.outputs[0][0], False)
        assert "nothing recorded yet" in recorder.outputs[0][0]
        for k in range(3):
            loss = step(model, jnp.ones((2, 4)))
            w.stream.settle()  # this step's rows are in before the view publishes
            w.log(step=k, loss=loss)
        running, update = recorder.outputs[-1]
    assert update and "nothing recorded yet" not in running
    assert "1 site, 3 steps seen" in running and "data:image/png;base64," in running
    # What a notebook saved now keeps says that the run was still going.
    assert "3 steps seen, still running when this picture was made" in running
    final, update = recorder.outputs[-1]
    assert update and "1 site, 3 steps seen, scalars: loss" in final
    assert "still running" not in final


def test_refreshes_of_the_saved_output_come_ever_more_rarely(monkeypatch):
    updates = []

    class Handle:
        def update(self, view):
            updates.append(view)

    w = watch(display=False)
    w._handle, w._saved_at = Handle(), -float("inf")
    w._refresh_saved_output()
    assert len(updates) == 1 and w._saved_every == 2 * SAVED_OUTPUT_SECONDS
    w._refresh_saved_output()  # too soon
    assert len(updates) == 1
    for _ in range(20):
        w._saved_at = -float("inf")
        w._refresh_saved_output()
    assert w._saved_every == SAVED_OUTPUT_MAX_SECONDS


def test_the_live_text_and_picture_name_kinds_as_the_view_does():
    model = Perturbed(nnx.Rngs(0))
    grad = nnx.jit(nnx.grad(lambda m, x: m(x)))
    with watch(model, grads=True, display=False) as w:
        grad(model, jnp.ones((2, 4)))
    text = live_text(read_run(w))
    assert "Perturbation" not in text and "Perturbation" not in repr(w.view)
    kinds = sorted(line.split()[1] for line in text.splitlines()[1:])
    assert kinds == ["Intermediate", "activation", "gradient"]


class Perturbed(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("h", self.linear(x))
        self.sow(nnx.Intermediate, "act", h)
        return h.sum()


def test_the_saved_picture_draws_every_site_with_its_bands():
    model = Perturbed(nnx.Rngs(0))
    grad = nnx.jit(nnx.grad(lambda m, x: m(x)))
    with watch(model, grads=True, display=False) as w:
        for k in range(3):
            grad(model, jnp.full((2, 4), float(k)))
            w.log(step=k, loss=float(k))
    page = live_html(read_run(w))
    picture = base64.b64decode(page.split("base64,")[1].split('"')[0])
    assert len(w.stream.series) == 3 and picture.startswith(b"\x89PNG")
