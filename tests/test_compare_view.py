"""CompareView in Python: its binary payload and the static fallback saved with a notebook."""

import jax
import numpy as np
import pytest
from flax import nnx
from models import ModeNet

from jaxcapture_nb import CompareView, compare_modes


class Tagged(nnx.Module):
    """Sows under a name that would run script if it were read as HTML."""

    def __init__(self, rngs):
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.dropout(x)
        self.sow(nnx.Intermediate, "<img src=x onerror=alert(1)>", h)
        return h


@pytest.fixture
def x():
    return jax.random.normal(jax.random.key(1), (16, 3, 4))


def test_numbers_travel_as_buffers_sized_by_sites_modes_and_bins(x):
    result = compare_modes(ModeNet(nnx.Rngs(0)), x, modes=("train", "eval", {"deterministic": True}), bins=32)
    view = CompareView(result)
    sites, modes = len(result.sites), 3
    assert sites > 5 and view._modes == result.modes
    assert len(view._stats) == sites * modes * len(view._stat_columns) * 8
    assert len(view._hists) == sites * modes * 32 * 4 and len(view._shifts) == sites * modes * 8
    hists = np.frombuffer(view._hists, np.int32).reshape(sites, modes, 32)
    np.testing.assert_array_equal(hists[0], result.sites[0].hists)
    shifts = np.frombuffer(view._shifts, np.float64).reshape(sites, modes)
    assert [s["site"] for s in view._sites] == [s.site for s in result.sites]
    assert np.nanmax(shifts[0]) == result.sites[0].shift


def test_the_saved_output_is_text_and_script_free_html(x):
    result = compare_modes(Tagged(nnx.Rngs(0)), x)
    data, _ = result._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == result.table()
    page = data["text/html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page and "<script" not in page
    assert page.count("<polyline") == 2 * len(result.sites)  # one outline per mode and site
    assert page == compare_modes(Tagged(nnx.Rngs(0)), x)._repr_mimebundle_()[0]["text/html"]
