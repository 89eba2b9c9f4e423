"""A saved notebook keeps each view's picture in place of its widget, which dies with the kernel."""

import re
import subprocess
import sys

import jax.numpy as jnp
import nbformat
from flax import nnx
from IPython.core.interactiveshell import InteractiveShell
from jupyter_server.services.contents.filemanager import FileContentsManager

from jaxcapture_nb import capture
from jaxcapture_nb.jupyter import server_extension
from jaxcapture_nb.jupyter.server_extension import WIDGET_VIEW, keep_saved_pictures


class OneLinearLayer(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "h", h)
        return h


def _output_of(obj) -> dict:
    """The notebook output a front end gets for displaying ``obj``, as nbformat writes it."""
    data, metadata = InteractiveShell.instance().display_formatter.format(obj)
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata)


def _notebook(*outputs, foreign=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("view", outputs=[*outputs, *foreign])
    return nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("text")])


def test_every_view_marks_its_picture_and_saving_keeps_only_the_picture(tmp_path):
    model = OneLinearLayer(nnx.Rngs(0))
    with capture(model) as cap:
        model(jnp.ones((2, 4)))
    output = _output_of(cap.show())
    assert WIDGET_VIEW in output.data and "<table" in output.data["text/html"]
    assert output.metadata[server_extension.MARK] == {"saved": "text/html"}
    # Another package's widget keeps its entry: only marked outputs change.
    foreign = nbformat.v4.new_output(
        "display_data", data={WIDGET_VIEW: {"model_id": "x"}, "text/plain": "IntSlider()"}
    )
    manager = FileContentsManager(root_dir=str(tmp_path))
    manager.register_pre_save_hook(keep_saved_pictures)
    notebook = _notebook(output, foreign=[foreign])
    manager.save({"type": "notebook", "format": "json", "content": notebook}, "run.ipynb")

    saved = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    ours, theirs = saved.cells[0].outputs
    assert WIDGET_VIEW not in ours.data and ours.data["text/html"] == output.data["text/html"]
    assert WIDGET_VIEW in theirs.data
    nbformat.validate(saved)


def test_a_200_row_capture_saves_under_400_kb(tmp_path):
    class Deep(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(16, 16, rngs=rngs) for _ in range(50)])

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
                self.sow(nnx.Intermediate, "x", x)
            return x

    model = Deep(nnx.Rngs(0))
    with capture(model, keep="all") as cap:
        for _ in range(4):
            model(jnp.ones((8, 16)))
    assert len(cap.records) == 200
    manager = FileContentsManager(root_dir=str(tmp_path))
    manager.register_pre_save_hook(keep_saved_pictures)
    content = _notebook(_output_of(cap.show()))
    manager.save({"type": "notebook", "format": "json", "content": content}, "big.ipynb")
    size = (tmp_path / "big.ipynb").stat().st_size
    assert size < 400_000, size


def test_jupyter_loads_the_extension_from_the_install():
    listed = subprocess.run(
        [sys.executable, "-m", "jupyter", "server", "extension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # without colours
    assert re.search(r"jaxcapture_nb\.jupyter\.server_extension\s+enabled", text), text
    assert re.search(r"jaxcapture_nb\.jupyter\.server_extension\s+OK", text), text


def test_the_runs_a_tutorial_saved_open_in_a_new_kernel(tmp_path):
    """Tutorial 06 keeps its runs beside the notebook; a new kernel opens them, as the tutorial says."""
    import pathlib
    import shutil

    from nbclient import NotebookClient

    tutorial = pathlib.Path(__file__).parents[1] / "notebooks" / "06_saving_and_comparing_runs.ipynb"
    copy = tmp_path / tutorial.name
    shutil.copy(tutorial, copy)
    notebook = nbformat.read(copy, as_version=4)
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["lr-0.05", "lr-1.0", "resumed"]
    reopen = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import warnings; warnings.simplefilter('error')\n"
                "from jaxcapture_nb import open_run\n"
                "view = open_run('runs/lr-0.05')\n"
                "print(sorted(s.label for s in view.stream.series.values()), view.stream.steps_seen)\n"
                "print('resumed', open_run('runs/resumed').stream.steps_seen)"
            )
        ]
    )
    NotebookClient(reopen, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = reopen.cells[0].outputs[0]["text"]
    assert printed.startswith("['hidden', 'logits']") and "resumed 120" in printed


OVERLAY_OF_A_RUNNING_WATCH = """
import jax.numpy as jnp
from flax import nnx
from IPython.display import display
from jaxcapture_nb import overlay_runs, watch

class OneLinearLayer(nnx.Module):
    def __init__(self, rngs):
        self.layer = nnx.Linear(4, 8, rngs=rngs)

    def __call__(self, x):
        h = self.layer(x)
        self.sow(nnx.Intermediate, "h", h)
        return h

model = OneLinearLayer(nnx.Rngs(0))
saved = watch(display=False)
with saved:
    saved.log(step=0, loss=1.0)
with watch(model, display=False) as w:
    display(overlay_runs({"before": saved, "now": w}))
    for step in range(12):
        model(jnp.ones((2, 4)))
        w.log(step=step, loss=1.0 / (step + 1))
"""


def test_a_saved_overlay_of_a_running_watch_keeps_the_picture_of_its_end(tmp_path):
    """Displayed before its live run had rows, the overlay's saved output still shows every step."""
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(OVERLAY_OF_A_RUNNING_WATCH)])
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    [output] = [o for o in notebook.cells[0].outputs if o.output_type == "display_data"]
    text = output.data["text/plain"]
    assert "run now:\nLiveView: 1 site, 12 steps seen" in text, text
    assert "nothing recorded yet" not in output.data["text/html"]
