"""%%capture_intermediates, tested on a real IPython shell."""

import jax.numpy as jnp
import pytest
from flax import nnx
from model_checks import has_captures
from models import ConvNet

from jaxcapture_nb import Capture


@pytest.fixture
def namespace(ipython):
    model = ConvNet(nnx.Rngs(0))
    model.eval()
    ipython.user_ns.update(model=model, x=jnp.ones((2, 8, 8, 1)), ran=[])
    yield ipython.user_ns
    for name in ("model", "x", "ran", "cap", "other", "y"):
        ipython.user_ns.pop(name, None)


def test_load_and_unload_register_the_magic(ipython):
    assert "capture_intermediates" in ipython.magics_manager.magics["cell"]
    ipython.run_line_magic("unload_ext", "jaxcapture_nb")
    assert "capture_intermediates" not in ipython.magics_manager.magics["cell"]
    ipython.run_line_magic("load_ext", "jaxcapture_nb")


def test_the_cell_runs_normally_and_the_capture_is_bound(ipython, namespace, capsys):
    result = ipython.run_cell(
        "%%capture_intermediates model --no-display\nprint('hello')\ny = model(x)\ny.shape"
    )
    assert result.success
    out = capsys.readouterr().out
    assert "hello" in out and "(2, 10)" in out  # prints and the last expression
    cap = namespace["_capture"]
    assert isinstance(cap, Capture) and [r.site for r in cap.records] == ["features", "logits"]
    assert not has_captures(namespace["model"])


def test_options_map_to_capture_arguments(ipython, namespace):
    cell = "%%capture_intermediates model --methods --include head --keep last --bins 8 --out cap --no-display\nmodel(x)\nmodel(x)"
    assert ipython.run_cell(cell).success
    cap = namespace["cap"]
    assert (cap.keep, cap.bins, cap.methods) == ("last", 8, True)
    assert [r.site for r in cap.records] == ["head.__call__"]
    assert cap.records[0].summary.bins == 8


def test_quoted_regular_expressions_lose_their_quotes(ipython, namespace):
    assert ipython.run_cell(
        '%%capture_intermediates model --include "features|logits" --no-display\nmodel(x)'
    ).success
    assert len(namespace["_capture"].records) == 2


def test_every_module_is_captured_when_none_is_named(ipython, namespace):
    namespace["other"] = ConvNet(nnx.Rngs(1))
    namespace["head"] = namespace["model"].head  # part of model: captured through it
    try:
        assert ipython.run_cell("%%capture_intermediates --no-display\nmodel(x)\nother(x)").success
    finally:
        namespace.pop("head")
    captures = namespace["_capture"]
    assert set(captures) == {"model", "other"}
    assert all(len(c.records) == 2 for c in captures.values())


def test_types_option_takes_variable_type_names(ipython, namespace):
    class Model(nnx.Module):
        def __call__(self, x):
            x = self.perturb("dx", x)
            self.sow(nnx.Intermediate, "y", x)
            return x

    namespace["model"] = Model()
    assert ipython.run_cell(
        "%%capture_intermediates model --types Perturbation --no-display\nmodel(x)"
    ).success
    assert [(r.site, r.var_type) for r in namespace["_capture"].records] == [("dx", nnx.Perturbation)]


def test_a_failing_cell_fails_keeps_the_partial_capture_and_leaves_the_model_clean(
    ipython, namespace, capsys
):
    result = ipython.run_cell(
        "%%capture_intermediates model --no-display\nmodel(x)\nraise ValueError('boom')"
    )
    assert not result.success and isinstance(result.error_in_exec, ValueError)
    assert capsys.readouterr().out.count("ValueError: boom") == 1
    assert len(namespace["_capture"].records) == 2
    assert not has_captures(namespace["model"])


@pytest.mark.parametrize("options", ["", "--stream"])
def test_a_failing_cell_shows_its_own_frames_under_its_execution_count(ipython, namespace, capsys, options):
    number = ipython.execution_count
    cell = (
        f"%%capture_intermediates model --no-display {options}\n"
        "model(x)\n"
        "def fail():\n"
        "    raise ValueError('boom')\n"
        "fail()"
    )
    result = ipython.run_cell(cell, store_history=True)  # as a notebook runs its cells
    shown = capsys.readouterr().out
    assert not result.success and isinstance(result.error_in_exec, ValueError)
    assert "magics.py" not in shown and "run_cell_magic" not in shown
    # The cell's frames only, numbered as the notebook shows the cell: the magic's line is line 1.
    assert shown.count("Cell In[") == 2
    assert f"Cell In[{number}], line 5" in shown and f"Cell In[{number}], line 4, in fail()" in shown
    assert "----> 5 fail()" in shown and shown.count("ValueError: boom") == 1


def test_a_cell_with_a_syntax_error_fails_before_anything_runs(ipython, namespace, capsys):
    number = ipython.execution_count
    result = ipython.run_cell("%%capture_intermediates model\nran.append(1)\n)", store_history=True)
    assert not result.success and isinstance(result.error_in_exec, SyntaxError)
    assert f"Cell In[{number}], line 3" in capsys.readouterr().out
    assert namespace["ran"] == [] and "_capture" not in namespace


def test_ipython_syntax_and_a_closing_semicolon_work_in_the_cell(ipython, namespace, capsys):
    assert ipython.run_cell("%%capture_intermediates model --no-display\n%time y = model(x)").success
    assert len(namespace["_capture"].records) == 2 and "Wall time" in capsys.readouterr().out
    assert ipython.run_cell("%%capture_intermediates model --no-display\nmodel(x).shape;").success
    assert "(2, 10)" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("missing_model", "could not evaluate 'missing_model'"),
        ("x", "is a ArrayImpl, not a flax.nnx.Module"),
        ("model --keep often", "invalid choice: 'often'"),
        ("model --types Param2", "'Param2' is not an nnx.Variable type"),
        ("model --include (", "not a valid regular expression"),
        ("model --bins 0", "--bins must be an integer from 1 to 65536"),
        ("model --every 5", "--every applies to --stream"),
        ("model --stream --keep last", "drop --keep and --types"),
        ("model --stream --every 0", "every must be a positive integer"),
        ("model --mode testing", "unknown mode 'testing': use train or eval, or name=value options"),
        ("model --mode determinstic=True", "'determinstic' is not an option of the modules set"),
        ("model --mode deterministic=yes", "is not name=value options with Python literal values"),
        ("model --mode eval,deterministic=True", "is not name=value options"),
        ("model.head --mode eval", "'model.head' is not a name"),
    ],
)
def test_bad_options_are_usage_errors_and_the_body_does_not_run(ipython, namespace, capsys, line, message):
    result = ipython.run_cell(f"%%capture_intermediates {line}\nran.append(1)")
    assert not result.success
    assert message in capsys.readouterr().err + str(result.error_in_exec)
    assert namespace["ran"] == []


def shown_after(ipython, cell):
    """What the display publisher got while ``cell`` ran."""
    shown = []
    ipython.display_pub.publish = lambda data, **kw: shown.append(data)
    try:
        assert ipython.run_cell(cell).success
    finally:
        del ipython.display_pub.publish
    return shown


def test_the_widget_is_displayed_after_the_cell_in_a_notebook(ipython, namespace, monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: True)
    (bundle,) = shown_after(ipython, "%%capture_intermediates model\nmodel(x);")
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == namespace["_capture"].table()


def test_without_a_notebook_front_end_or_on_another_process_nothing_is_displayed(
    ipython, namespace, monkeypatch
):
    from jaxcapture_nb import Watch

    # The test shell is a terminal IPython: no kernel draws widgets there.
    assert shown_after(ipython, "%%capture_intermediates model\nmodel(x);") == []
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: True)
    monkeypatch.setattr("jax.process_index", lambda: 1)
    assert shown_after(ipython, "%%capture_intermediates model\nmodel(x);") == []
    assert shown_after(ipython, "%%capture_intermediates model --stream\nmodel(x);") == []
    assert isinstance(namespace["_capture"], Watch)  # it ran, and was bound


def test_the_docstring_shows_the_with_block(ipython):
    doc = ipython.magics_manager.magics["cell"]["capture_intermediates"].__doc__
    assert "with jaxcapture_nb.capture(model, methods=True" in doc


def test_stream_runs_the_cell_inside_watch_and_binds_it(ipython, namespace):
    from jaxcapture_nb import Watch

    cell = "%%capture_intermediates model --stream --every 2 --no-display --out w\nfor _ in range(5):\n    model(x)"
    assert ipython.run_cell(cell).success
    w = namespace.pop("w")
    assert isinstance(w, Watch) and not has_captures(namespace["model"])
    # Forward passes alone train nothing: evaluations, numbered by themselves.
    features = w.stream.series[((), "Evaluation", "features")]
    assert w.stream.steps_seen == 5 and features.steps[: features.size].tolist() == [0, 2, 4]


def test_stream_every_n_summarizes_only_the_recorded_calls_of_a_compiled_step(
    ipython, namespace, monkeypatch
):
    from jaxcapture_nb.stats.step_table import StepTable

    summarized = []
    packed = StepTable.packed

    def spy(self, bins, layout=None):
        summarized.append(1)
        return packed(self, bins, layout)

    monkeypatch.setattr(StepTable, "packed", spy)
    namespace["traces"] = []
    cell = (
        "%%capture_intermediates model --stream --every 3 --steps calls --no-display --out w\n"
        "@nnx.jit\n"
        "def step(model, x):\n"
        "    traces.append(1)\n"
        "    return model(x).sum()\n"
        "for _ in range(7):\n"
        "    step(model, x)"
    )
    ipython.user_ns["nnx"] = nnx
    assert ipython.run_cell(cell).success
    w = namespace.pop("w")
    assert len(namespace.pop("traces")) == 1
    features = w.stream.series[((), "Intermediate", "features")]
    assert w.stream.steps_seen == 7 and features.steps[: features.size].tolist() == [0, 3, 6]
    # The tables of calls 0, 3 and 6 were summarized, and only those.
    assert len(summarized) == 3


def test_stream_refuses_linen_models(ipython, namespace):
    from flax import linen as nn

    namespace["dense"] = nn.Dense(2)
    result = ipython.run_cell("%%capture_intermediates dense --stream\nran.append(1)")
    namespace.pop("dense")
    assert not result.success and "--stream needs NNX models" in str(result.error_in_exec)
    assert namespace["ran"] == []


def test_the_docstring_shows_the_watch_block(ipython):
    doc = ipython.magics_manager.magics["cell"]["capture_intermediates"].__doc__
    assert "with jaxcapture_nb.watch(model, every=10) as w:" in doc


def test_mode_runs_the_cell_on_a_view_and_binds_the_model_again(ipython, namespace):
    model = namespace["model"]
    model.train()
    cell = (
        "%%capture_intermediates model --mode eval --no-display\n"
        "seen.append((model.bn.use_running_average, model.dropout.deterministic))\nmodel(x)"
    )
    namespace["seen"] = []
    assert ipython.run_cell(cell).success
    assert namespace.pop("seen") == [(True, True)]
    assert namespace["model"] is model and not model.bn.use_running_average
    assert [r.site for r in namespace["_capture"].records] == ["features", "logits"]


def test_mode_takes_view_options(ipython, namespace):
    model = namespace["model"]
    model.train()
    namespace["seen"] = []
    cell = (
        "%%capture_intermediates model --mode deterministic=True,use_running_average=False --no-display\n"
        "seen.append((model.bn.use_running_average, model.dropout.deterministic))"
    )
    assert ipython.run_cell(cell).success
    assert namespace.pop("seen") == [(False, True)]


def test_mode_values_may_hold_commas():
    from jaxcapture_nb.jupyter.magics import _parse_mode

    assert _parse_mode("'decode=True, batch_size=(1, 2), max_length=8'") == {
        "decode": True,
        "batch_size": (1, 2),
        "max_length": 8,
    }


def test_mode_without_names_leaves_linen_modules_as_they_are(ipython, namespace):
    from flax import linen as nn

    from jaxcapture_nb import Capture

    namespace["dense"] = nn.Dense(2)
    namespace["seen"] = []
    cell = "%%capture_intermediates --mode eval --no-display\nseen.append(model.bn.use_running_average)"
    result = ipython.run_cell(cell)
    namespace.pop("dense")
    assert result.success and namespace.pop("seen") == [True]
    assert set(namespace["_capture"]) == {"model", "dense"}
    assert all(isinstance(c, Capture) for c in namespace["_capture"].values())


def test_mode_refuses_linen_models(ipython, namespace):
    from flax import linen as nn

    namespace["dense"] = nn.Dense(2)
    result = ipython.run_cell("%%capture_intermediates dense --mode eval\nran.append(1)")
    namespace.pop("dense")
    assert not result.success and "Linen module, whose modes are call arguments" in str(result.error_in_exec)
    assert namespace["ran"] == []


def test_a_failing_cell_under_mode_binds_the_model_again(ipython, namespace):
    model = namespace["model"]
    result = ipython.run_cell("%%capture_intermediates model --mode train --no-display\nmodel(x)\n1 / 0")
    assert not result.success and isinstance(result.error_in_exec, ZeroDivisionError)
    assert namespace["model"] is model and model.bn.use_running_average and not has_captures(model)
    assert len(namespace["_capture"].records) == 2


class _Residual(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        x = x + self.lin(x)
        self.sow(nnx.Intermediate, "residual", x)
        return x


class _SharedBlock(nnx.Module):
    """One residual block applied twice per call, as a weight-tied layer loop does."""

    def __init__(self, rngs: nnx.Rngs):
        self.block = _Residual(rngs)

    def __call__(self, x):
        return self.block(self.block(x))


def test_stream_shows_a_site_sowed_twice_a_step_as_two_sites_numbered_by_step(ipython, namespace):
    namespace.update(shared=_SharedBlock(nnx.Rngs(0)), nnx=nnx, h=jnp.ones((2, 4)))
    cell = (
        "%%capture_intermediates shared --stream --every 2 --no-display --out w\n"
        "step = nnx.jit(lambda model, x: model(x).sum())\n"
        "for _ in range(5):\n"
        "    step(shared, h)"
    )
    try:
        assert ipython.run_cell(cell).success
        w = namespace.pop("w")
    finally:
        for name in ("shared", "nnx", "h", "step"):
            namespace.pop(name, None)
    rows = {s.label: s.steps[: s.size].tolist() for s in w.stream.series.values()}
    assert rows == {"block.residual": [0, 2, 4], "block.residual[1]": [0, 2, 4]}
    assert "block.residual[1]" in repr(w) and "5 steps seen" in repr(w)
