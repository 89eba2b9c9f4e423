"""CompareView in Python: its binary payload and the static fallback saved with a notebook."""

from html.parser import HTMLParser

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from models import ModeNet

from jaxcapture_nb import CompareView, SiteComparison, compare_modes
from jaxcapture_nb.stats.schema import MODE_COLOURS, compare_columns, number_text

STAT_COLUMNS = compare_columns()

NAME = "<img src=x onerror=alert(1)>"


class ModeDependentSows(nnx.Module):
    """Linear, BatchNorm and Dropout, a sow under a name that would run script
    if read as HTML, a sow with NaNs, and a site only training reaches."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.deterministic = False

    def __call__(self, x):
        h = self.dropout(self.bn(self.linear(x)))
        self.sow(nnx.Intermediate, NAME, h)
        self.sow(nnx.Intermediate, "log", jnp.log(h))
        if not self.deterministic:
            self.sow(nnx.Intermediate, "train_only", h)
        return h


@pytest.fixture
def x():
    return jax.random.normal(jax.random.key(1), (16, 3, 4))


@pytest.fixture
def result(x):
    return compare_modes(ModeDependentSows(nnx.Rngs(0)), x[:, 0])


def tags(page):
    """Every element of a page as (tag, attribute names), as a browser would parse it."""
    found = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, [name for name, _ in attrs]))

    Parser().feed(page)
    return found


def sync_keys(view):
    return {name for name in view.keys if name.startswith("_") and not name.startswith("_view")}


def test_numbers_travel_as_buffers_sized_by_sites_modes_and_bins(x):
    result = compare_modes(ModeNet(nnx.Rngs(0)), x, modes=("train", "eval", {"deterministic": True}), bins=32)
    view = CompareView(result)
    sites, modes = len(result.sites), 3
    assert sites > 5 and view._modes == result.modes and len(view._modes) == modes
    for name in ("_stats", "_hists", "_ranges", "_shifts"):
        assert type(getattr(view, name)) is bytes, name
    assert {
        "_modes",
        "_sites",
        "_stat_columns",
        "_stats",
        "_hists",
        "_ranges",
        "_shifts",
        "_bins",
        "_note",
    } <= sync_keys(view)
    # ModeNet switches modes by its views alone: nothing to note.
    assert view._note == result.note == ""
    assert view._bins == 32 and view._stat_columns == list(STAT_COLUMNS)
    assert len(view._stats) == sites * modes * len(STAT_COLUMNS) * 8
    assert len(view._hists) == sites * modes * 32 * 4
    assert len(view._ranges) == sites * 2 * 8 and len(view._shifts) == sites * modes * 8

    stats = np.frombuffer(view._stats, np.float64).reshape(sites, modes, len(STAT_COLUMNS))
    hists = np.frombuffer(view._hists, np.int32).reshape(sites, modes, 32)
    ranges = np.frombuffer(view._ranges, np.float64).reshape(sites, 2)
    shifts = np.frombuffer(view._shifts, np.float64).reshape(sites, modes)
    for i, site in enumerate(result.sites):
        np.testing.assert_array_equal(stats[i], site.stats)
        np.testing.assert_array_equal(hists[i], site.hists)
        np.testing.assert_array_equal(shifts[i], site.shifts)
        assert tuple(ranges[i]) == (site.lo, site.hi) and site.lo < site.hi
    # Every mode's histogram counts every finite value it saw.
    assert (hists.sum(axis=2) > 0).all()
    assert [s["site"] for s in view._sites] == [s.site for s in result.sites]
    assert np.nanmax(shifts[0]) == result.sites[0].shift > 0
    assert result.sites[0].shift >= result.sites[-1].shift


def test_text_travels_as_json_with_shapes_per_mode(result):
    view = CompareView(result)
    by_name = {s["site"]: s for s in view._sites}
    assert by_name[NAME] == {
        "site": NAME,
        "label": NAME,
        "type": "Intermediate",
        "shapes": [[16, 8], [16, 8]],
        "same": False,
    }
    # Only training reaches this site: eval's shape is missing, and so is its shift.
    assert by_name["train_only"]["shapes"] == [[16, 8], None] and not by_name["train_only"]["same"]
    shifts = np.frombuffer(view._shifts, np.float64).reshape(-1, 2)
    assert np.isnan(shifts[view._sites.index(by_name["train_only"])]).all()
    # The linear layer comes before every switch: the same in both modes.
    assert by_name["linear.__call__"]["same"] is True
    # No list of numbers travels as JSON beside the shapes.
    for site in view._sites:
        assert set(site) == {"site", "label", "type", "shapes", "same"}


def test_the_saved_output_is_text_and_script_free_html(result):
    data, _ = result._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == result.table() == repr(result.show())
    page = data["text/html"]
    assert NAME not in page and "<img" not in page and "<script" not in page.lower()
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") == 1
    assert not [tag for tag, attrs in tags(page) if tag == "script" or any(a.startswith("on") for a in attrs)]
    # One outline per mode for each site every mode reached; none for a mode that missed it.
    complete = sum(s.shapes.count(None) == 0 for s in result.sites)
    assert page.count("<polyline") == 2 * complete + 1
    # A legend of the modes in their colours, above the table.
    assert page.index(">train</span>") < page.index(">eval</span>") < page.index("<table")
    # Each mode's colour marks its swatch and its columns' rule, never text (orange on white reads at 2.5:1).
    for colour in MODE_COLOURS[:2]:
        assert f"background:{colour}" in page and f"border-bottom:2px solid {colour}" in page
        assert f"color:{colour}" not in page


def test_the_html_shows_every_statistic_rounded_and_flags_nans(result):
    page = result._repr_mimebundle_()[0]["text/html"]
    site = next(s for s in result.sites if s.site == "log")
    row = next(r for r in page.split("<tr") if ">log</td>" in r)
    for m in range(2):
        for k in range(len(STAT_COLUMNS)):
            assert f">{number_text(site.stats[m, k])}</td>" in row
    nan = STAT_COLUMNS.index("nan")
    assert site.stats[0, nan] > 0  # log of Dropout's zeros and of negatives
    assert row.count("color:#c00") == 1 + (site.stats[:, nan] > 0).sum()  # the name and each NaN count
    assert 'title="no shift: the site is missing in eval"' in page


def test_three_modes(x):
    modes = ("train", "eval", {"deterministic": True})
    result = compare_modes(ModeDependentSows(nnx.Rngs(0)), x[:, 0], modes=modes)
    view = CompareView(result)
    sites = len(result.sites)
    assert view._modes == ["train", "eval", "deterministic=True"]
    assert np.frombuffer(view._hists, np.int32).size == sites * 3 * result.bins
    page = view._repr_mimebundle_()[0]["text/html"]
    assert page.count('colspan="6"') == 3 and f"border-bottom:2px solid {MODE_COLOURS[2]}" in page
    complete = sum(s.shapes.count(None) == 0 for s in result.sites)
    missing = sum(s.shapes.count(None) for s in result.sites)
    assert page.count("<polyline") == 3 * sites - missing and complete < sites
    assert view._repr_mimebundle_()[0]["text/plain"] == result.table()


def test_the_html_is_deterministic(x):
    first = compare_modes(ModeDependentSows(nnx.Rngs(0)), x[:, 0])._repr_mimebundle_()[0]["text/html"]
    second = compare_modes(ModeDependentSows(nnx.Rngs(0)), x[:, 0])._repr_mimebundle_()[0]["text/html"]
    assert first == second
    assert "0x" not in first  # no memory addresses


class Flip(nnx.Module):
    """Reverses its input's rows when ``flip`` is set: the same statistics and histogram, other values."""

    def __init__(self, flip: bool):
        self.flip = flip

    def __call__(self, x):
        h = x[::-1] if self.flip else x
        self.sow(nnx.Intermediate, "rows", h)
        self.sow(nnx.Intermediate, "total", h.sum())
        return h


def test_a_site_the_same_in_all_modes_is_marked_in_the_text_and_the_html(result):
    same = [s.site for s in result.sites if s.same]
    assert same == ["linear.__call__"]  # before BatchNorm and Dropout, which the modes switch
    lines = result.table().splitlines()
    marked = [line for line in lines if line.endswith("(same in all modes)")]
    assert len(marked) == 1 and marked[0].startswith("linear.__call__ ")
    assert len(lines) == 2 + len(result.sites)  # the mark takes no line of its own

    page = result._repr_mimebundle_()[0]["text/html"]
    row = next(r for r in page.split("<tr") if ">linear (output)</td>" in r)
    # The first mode's statistics, then the mark across eval's columns.
    assert row.count("same in all modes</td>") == 1 and f'colspan="{len(STAT_COLUMNS)}"' in row
    assert 'title="same in all modes: eval gave this site the same values as train' in row
    site = next(s for s in result.sites if s.site == "linear.__call__")
    assert f">{number_text(site.stats[0, 0])}</td>" in row
    assert page.count("same in all modes</td>") == 1


def test_same_means_equal_values_not_only_equal_statistics():
    whole = jnp.arange(12.0).reshape(4, 3)  # whole numbers: sums in any order are exact
    result = compare_modes(Flip(False), whole, modes={"as is": Flip(False), "flipped": Flip(True)})
    by_site = {s.site: s for s in result.sites}
    rows, total = by_site["rows"], by_site["total"]
    # Reversed rows: every statistic and the histogram agree, the values do not.
    np.testing.assert_array_equal(rows.stats[0], rows.stats[1])
    np.testing.assert_array_equal(rows.hists[0], rows.hists[1])
    assert rows.values_equal is False and not rows.same
    assert total.same and by_site["__call__"].same is False


def test_without_values_same_means_equal_shapes_statistics_and_histograms(result):
    site = next(s for s in result.sites if s.site == "linear.__call__")
    kept = {name: getattr(site, name) for name in ("site", "label", "var_type", "lo", "hi", "shifts")}
    runs = SiteComparison(**kept, shapes=[(), ()], stats=site.stats, hists=site.hists)
    assert runs.values_equal is None and runs.same
    moved = site.hists.copy()
    moved[1, :2] = moved[1, 1::-1] + [1, 0]
    assert not SiteComparison(**kept, shapes=[(), ()], stats=site.stats, hists=moved).same
    assert not SiteComparison(**kept, shapes=[(), None], stats=site.stats, hists=site.hists).same
    empty = np.full_like(site.stats, np.nan)
    assert not SiteComparison(**kept, shapes=[(), ()], stats=empty, hists=0 * site.hists).same
