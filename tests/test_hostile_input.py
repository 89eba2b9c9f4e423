"""Bad and hostile input: a clear error naming the argument, or safe output, and nothing lost."""

import json
import pathlib
import re
import shutil
import subprocess
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from flax import nnx
from flax.core import FrozenDict
from models import LinenModeNet, ModeNet

from jaxcapture_nb import JaxCaptureWarning, capture, compare_modes, mode_panel, read_run, summarize, watch
from jaxcapture_nb.core.names import QUOTE_LIMIT, html_name, quoted, shown_name
from jaxcapture_nb.views.compare_static import comparison_html
from jaxcapture_nb.views.live_static import live_html, live_text

# What no text or HTML view may write raw: C0/C1 controls, line separators, bidi controls.
RAW_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = ("a\nb", "x\x00y", "r\u202eevil")

ROOT = pathlib.Path(__file__).resolve().parents[1]


class Hostile(nnx.Module):
    """Sows under names that hold a newline, a NUL and a right-to-left override, in a submodule whose
    attribute name holds a newline too."""

    def __init__(self, rngs):
        setattr(self, "sub\nmodule", nnx.Linear(3, 4, rngs=rngs))
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.drop(getattr(self, "sub\nmodule")(x))
        for name in HOSTILE:
            self.sow(nnx.Intermediate, name, h)
        return h.sum()


def no_raw_controls(text, keep_newlines=False):
    """Whether ``text`` holds no raw control character (outside the line breaks a view writes itself)."""
    if keep_newlines:
        text = text.replace("\n", "")
    return RAW_CONTROL.search(text) is None


def test_names_are_written_with_their_control_characters_escaped():
    assert [shown_name(n) for n in HOSTILE] == ["a\\nb", "x\\x00y", "r\\u202eevil"]
    assert shown_name("\u2028\x85\u2066") == "\\u2028\\x85\\u2066"
    assert shown_name("encoder.attn_out") == "encoder.attn_out"
    # Right-to-left letters are isolated in HTML; plain ASCII needs no wrapper.
    assert html_name("\u05e9\u05dc\u05d5\u05dd") == "<bdi>\u05e9\u05dc\u05d5\u05dd</bdi>"
    assert html_name("<x>") == "&lt;x&gt;"


def test_the_browser_escapes_names_as_the_kernel_does(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed; the widgets do not need it, this check does")
    names = [*HOSTILE, "\t\r\x7f\x9f\u061c\u200e\u200f\u202a\u2069\u2029", "plain.name", "\u05e9"]
    # names.js imports nothing: Node loads it as it is, an ES module.
    module = tmp_path / "names.mjs"
    module.write_text((ROOT / "js" / "names.js").read_text())
    script = (
        f"const m = await import({json.dumps(module.as_uri())});"
        f"console.log(JSON.stringify({json.dumps(names)}.map(m.shownName)));"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [shown_name(n) for n in names]


def test_control_characters_in_names_neither_split_rows_nor_show_raw_in_capture_views():
    model = Hostile(nnx.Rngs(0))
    with capture(model, methods=True) as cap:
        model(jnp.ones((2, 3)))
    records = cap.records
    assert {r.name for r in records} >= set(HOSTILE)
    table = cap.table()
    assert len(table.splitlines()) == 1 + len(records)  # the header and one line per site
    assert no_raw_controls(table, keep_newlines=True)
    assert "a\\nb" in table and "r\\u202eevil" in table and "sub\\nmodule" in table
    view = cap.show()
    data, _ = view._repr_mimebundle_()
    assert data["text/plain"] == repr(view) == table
    assert no_raw_controls(data["text/html"])
    assert "r\\u202eevil" in data["text/html"]


def test_an_empty_capture_names_the_sites_include_turned_away_escaped():
    model = Hostile(nnx.Rngs(0))
    with capture(model, include="nothing matches this") as cap:
        model(jnp.ones((2, 3)))
    assert "a\\nb" in cap.table() and no_raw_controls(cap.table(), keep_newlines=True)
    assert len(cap.table().splitlines()) == 2


def test_control_characters_in_site_and_scalar_names_stay_escaped_in_the_live_view():
    model = Hostile(nnx.Rngs(0))
    with watch(model, display=False) as w:
        for step in range(2):
            model(jnp.ones((2, 3)))
            w.log(step=step, **{"loss\n\u202e": 1.0})
    text = live_text(read_run(w))
    sites = [s.label for s in w.stream.series.values()]
    assert len(text.splitlines()) == 1 + len(sites)  # a summary line and one per site
    assert no_raw_controls(text, keep_newlines=True)
    assert "loss\\n\\u202e" in text and "r\\u202eevil" in text
    assert repr(w.view) == text
    assert no_raw_controls(live_html(read_run(w)), keep_newlines=True)  # the <pre> keeps its own lines


def test_control_characters_in_site_names_and_mode_labels_stay_escaped_in_a_comparison():
    model = Hostile(nnx.Rngs(0))
    comparison = compare_modes(model, jnp.ones((2, 3)), modes={"tr\u202eain": "train", "eval\n": "eval"})
    table = comparison.table()
    # The shift note, the header, and one line per site.
    assert len(table.splitlines()) == 2 + len(comparison.sites)
    assert no_raw_controls(table, keep_newlines=True)
    assert "tr\\u202eain" in table and "x\\x00y" in table
    view = comparison.show()
    data, _ = view._repr_mimebundle_()
    assert data["text/plain"] == repr(view) == table
    assert data["text/html"] == comparison_html(comparison)
    assert no_raw_controls(data["text/html"])


def test_right_to_left_names_are_isolated_in_the_saved_html():
    class Rtl(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "\u05e9\u05dc\u05d5\u05dd", x)
            return x

    model = Rtl()
    with capture(model) as cap:
        model(jnp.ones((2, 3)))
    page = cap.show()._repr_mimebundle_()[0]["text/html"]
    assert "<td><bdi>\u05e9\u05dc\u05d5\u05dd</bdi></td>" in page


# -- a mode panel quotes what the browser sends, bounded -----------------------


def test_a_huge_value_from_the_browser_is_quoted_bounded_in_the_error_box():
    panel = mode_panel(ModeNet(nnx.Rngs(0)))
    huge = "x" * 10_000_000
    panel.set_state({"_values": {"MultiHeadAttention": {"max_length": huge}}})
    error = panel.error
    assert "max_length takes an int" in error
    assert len(error) < 2 * QUOTE_LIMIT + 200
    assert "…" in error and "10,000,000 characters" in error
    # A huge class name or preset name is cut the same way.
    panel.set_state({"_values": {huge: {}}})
    assert len(panel.error) < 2 * QUOTE_LIMIT + 200 and "10,000,000 characters" in panel.error
    panel._handle_custom_msg({"action": huge}, [])
    assert len(panel.error) < 2 * QUOTE_LIMIT + 200 and "unknown preset" in panel.error
    for malformed in ({"action": [1] * 1_000_000}, {"action": None}, "not a dict"):
        panel._handle_custom_msg(malformed, [])
        assert len(panel.error) < 2 * QUOTE_LIMIT + 200 and "unknown preset" in panel.error
    # The panel still takes a good value after all of this.
    panel.set_state({"_values": {"MultiHeadAttention": {"max_length": 3}}})
    assert panel.error == "" and panel.settings["MultiHeadAttention"]["max_length"] == 3


def test_quoted_keeps_short_values_whole():
    assert quoted("abc") == "'abc'" and quoted([1, 2]) == "[1, 2]"
    assert quoted("y" * 500, limit=10) == "'yyyyyyyyy… (str, 500 characters)"


# -- the heatmap of an empty value ---------------------------------------------


def test_selecting_an_empty_value_answers_with_an_empty_heatmap():
    class Empty(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "none", jnp.zeros((0, 3, 4)))
            self.sow(nnx.Intermediate, "wide", jnp.zeros((3, 0)))
            return x

    model = Empty()
    with capture(model) as cap:
        model(1.0)
    view = cap.show()
    rows = view._sites
    assert [r["note"] for r in rows] == ["no values", "no values"]
    assert not any(r["has_stats"] or r["has_value"] for r in rows)
    for i, shape in enumerate(("(0, 3, 4)", "(3, 0)")):
        view._heatmap_request += 1
        view._selected = i
        assert view._heatmap_note == f"No heatmap: empty (shape {shape})."
        assert view._heatmap == b"" and view._heatmap_shape == [] and view._heatmap_site == i
        assert view._heatmap_answered == view._heatmap_request


def test_an_empty_value_is_compared_and_plotted_without_error():
    class Empty(nnx.Module):
        def __init__(self, rngs):
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            self.sow(nnx.Intermediate, "none", jnp.zeros((0, 3, 4)))
            return self.drop(x).sum()

    model = Empty(nnx.Rngs(0))
    comparison = compare_modes(model, jnp.ones((8, 3)))
    (site,) = [s for s in comparison.sites if s.site == "none"]
    assert site.shapes == [(0, 3, 4), (0, 3, 4)] and site.hists.sum() == 0
    with capture(model) as cap:
        model(jnp.ones((8, 3)))
    assert len(cap.plot().axes) == 1


# -- watch: bad log/update values are refused at the call -------------------------


class Sower(nnx.Module):
    def __call__(self, x):
        self.sow(nnx.Intermediate, "h", x * 2)
        return x


def test_a_bad_scalar_is_refused_at_log_and_the_watch_goes_on():
    model = Sower()
    with watch(model, display=False) as w:
        model(jnp.ones(3))
        w.log(step=0, loss=1.0)
        with pytest.raises(TypeError, match=r"scalar 'loss'.*str: 'high'"):
            w.log(step=1, loss="high")
        for bad in (jnp.ones(2, jnp.complex64), np.array(["a"]), np.zeros(0), [1.0], None):
            with pytest.raises(TypeError, match="scalar 'loss'"):
                w.log(step=1, loss=bad)
        with pytest.raises(TypeError, match=r"log\(\): step .*str 'x'"):
            w.log(step="x", loss=1.0)
        # Numbers, NumPy scalars and arrays of one or more numbers, JAX arrays: all recorded.
        w.log(step=1, loss=np.float32(2.0), acc=np.array([0.5]), ok=True)
        w.log(step=2, loss=jnp.float32(3.0), acc=jnp.array([0.25, 0.75]), ok=np.int64(1))
        # Nothing refused was queued: what the publishing thread runs reads every value.
        w.stream.settle()
        assert w._publisher is not None and w._publisher.is_alive()
    series = w.stream.scalars["loss"]
    assert series.steps[: series.size].tolist() == [0, 1, 2]
    assert series.stats[: series.size, 0].tolist() == [1.0, 2.0, 3.0]
    assert w.stream.scalars["acc"].stats[:2, 0].tolist() == [0.5, 0.5]


def test_bad_update_arguments_are_refused_at_the_call_and_the_watch_goes_on():
    with watch(display=False) as w:
        with pytest.raises(TypeError, match=r"update\(\): step is the training step.*str 'x'"):
            w.update(step="x", summaries={"h": summarize(jnp.ones(3))})
        with pytest.raises(
            TypeError, match=r"pytree of Summary from summarize\(\).*got a str: 'not a summary'"
        ):
            w.update(0, "not a summary")
        with pytest.raises(TypeError, match=r"its leaf \['loss'\] is a float"):
            w.update(0, {"h": summarize(jnp.ones(3)), "loss": 1.0})
        w.update(0, {"h": summarize(jnp.ones(3))})
        w.update(1, {"h": jnp.arange(4.0)})
    (series,) = w.stream.series.values()
    assert series.label == "h" and series.steps[: series.size].tolist() == [0, 1]


# -- compare_modes on a Linen module without its variables ------------------------


def test_compare_modes_on_a_linen_module_without_variables_names_them():
    module = LinenModeNet()
    x = jnp.ones((4, 3))
    modes = {"eval": {"train": False}, "eval again": {"train": False}}
    with pytest.raises(
        TypeError,
        match=r"variables are missing.*array of shape \(4, 3\).*compare_modes\(module, variables, x",
    ):
        compare_modes(module, x, modes=modes)
    variables = module.init(jax.random.key(0), x, train=False)
    assert compare_modes(module, variables, x, modes=modes).modes == ["eval", "eval again"]


def test_compare_modes_on_a_linen_module_takes_frozen_variables():
    module = nn.Dense(2)
    variables = FrozenDict(module.init(jax.random.key(0), jnp.ones((1, 3))))
    result = compare_modes(module, variables, jnp.ones((1, 3)), modes={"a": {}, "b": {}})
    assert result.modes == ["a", "b"]


# -- plot ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argument, value", [("columns", 0), ("columns", -1), ("columns", 1.5), ("max_sites", 0)]
)
def test_plot_refuses_a_count_that_is_not_positive(argument, value):
    model = Sower()
    with capture(model) as cap:
        model(jnp.ones(3))
    with pytest.raises(ValueError, match=rf"{argument} takes a positive whole number, got {value}"):
        cap.plot(**{argument: value})
    assert len(cap.plot(columns=1).axes) == 1


# -- keep="all" says when it holds a lot ---------------------------------------------


def test_keep_all_warns_once_when_the_values_it_keeps_grow_large(monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.capturing.recorder.KEPT_BYTES_WARNING", 4096)
    model = Sower()
    x = jnp.ones((16, 16))  # 1 KiB per value
    with pytest.warns(JaxCaptureWarning) as caught:
        with capture(model) as cap:
            for _ in range(20):
                model(x)
    assert len(cap.records) == 20
    (warning,) = [w for w in caught if issubclass(w.category, JaxCaptureWarning)]
    text = str(warning.message)
    assert "keep='all'" in text and "keep='last'" in text and "keep='summary'" in text


def test_one_large_call_under_keep_all_does_not_warn(monkeypatch):
    """A single call keeps what it sows by design (compare_modes relies on it): only a loop warns."""
    monkeypatch.setattr("jaxcapture_nb.capturing.recorder.KEPT_BYTES_WARNING", 4096)

    class Wide(nnx.Module):
        def __call__(self, x):
            for k in range(20):
                self.sow(nnx.Intermediate, f"h{k}", x * k)
            return x

    model = Wide()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with capture(model) as cap:
            model(jnp.ones((16, 16)))
    assert len(cap.records) == 20
    assert not [w for w in caught if issubclass(w.category, JaxCaptureWarning)]


@pytest.mark.parametrize("keep", ["last", "summary"])
def test_keep_last_and_summary_do_not_warn_about_memory(monkeypatch, keep):
    monkeypatch.setattr("jaxcapture_nb.capturing.recorder.KEPT_BYTES_WARNING", 4096)
    model = Sower()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with capture(model, keep=keep) as cap:
            for _ in range(20):
                model(jnp.ones((16, 16)))
    assert cap.records[0].call_index == 19
    assert not [w for w in caught if issubclass(w.category, JaxCaptureWarning)]


def test_keep_all_warns_at_the_end_of_a_jitted_loop(monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.capturing.recorder.KEPT_BYTES_WARNING", 4096)
    model = Sower()
    step = nnx.jit(lambda m, x: m(x))
    with pytest.warns(JaxCaptureWarning, match="keep='last'"):
        with capture(model):
            for _ in range(20):
                step(model, jnp.ones((16, 16)))
