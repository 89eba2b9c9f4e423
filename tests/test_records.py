"""Records' scalar statistics and the plain-text table."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcapture_nb import summarize
from jaxcapture_nb.capturing.recorder import Recorder
from jaxcapture_nb.stats.records import Record, flat_stats, format_table


def test_stacked_summaries_pool_to_the_statistics_of_the_whole_array():
    x = jax.random.normal(jax.random.key(0), (4, 50, 3)) * jnp.arange(1.0, 5.0)[:, None, None] + 10.0
    stacked = jax.vmap(summarize)(x)
    pooled = flat_stats(stacked)
    whole = np.asarray(x, np.float64)
    assert pooled["count"] == whole.size
    np.testing.assert_allclose(pooled["mean"], whole.mean(), rtol=1e-5)
    np.testing.assert_allclose(pooled["std"], whole.std(), rtol=1e-4)
    np.testing.assert_allclose([pooled["min"], pooled["max"]], [whole.min(), whole.max()], rtol=1e-6)


def test_constant_values_show_zero_spread_in_the_table():
    value = jnp.full((8, 1), 1.3848)
    record = Record(("out",), "y", 0, "intermediates", (8, 1), "float32", value, summarize(value))
    row = format_table([record]).splitlines()[1].split()
    assert row[6:10] == ["1.385", "0", "1.385", "1.385"]


def test_an_empty_table_says_why_under_its_header():
    assert format_table([]).splitlines()[1:] == ["(nothing was sowed)"]
    assert format_table([], empty="(no site matched include='x')").splitlines()[1:] == [
        "(no site matched include='x')"
    ]


@pytest.mark.parametrize("keep", ["all", "last", "summary"])
def test_call_index_counts_every_value_of_a_site(keep):
    recorder = Recorder(keep=keep, bins=4)
    for _ in range(3):
        recorder.add((), "intermediates", "h", jnp.ones(2))
    calls = [r.call_index for r in recorder.records()]
    assert calls == ([0, 1, 2] if keep == "all" else [2])


def test_sites_include_turns_away_are_remembered_in_order():
    recorder = Recorder(include="keep$")
    for name in ("b", "keep", "a", "b"):
        recorder.add(("m",), "intermediates", name, jnp.ones(2))
    assert list(recorder.dropped_sites) == ["m.b", "m.a"]
    assert [r.site for r in recorder.records()] == ["m.keep"]


NO_NOTEBOOK = """
import sys
for name in ("IPython", "ipywidgets", "anywidget"):
    sys.modules[name] = None  # as if not installed: importing them raises
import jax.numpy as jnp
from flax import nnx
import jaxcapture_nb
model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
with jaxcapture_nb.capture(model, methods=True) as cap:
    model(jnp.ones(2))
print(len(cap.records))
"""


def test_the_package_works_without_ipython_or_widgets():
    out = subprocess.run([sys.executable, "-c", NO_NOTEBOOK], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"
