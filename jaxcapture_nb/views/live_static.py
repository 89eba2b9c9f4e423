"""What a saved notebook keeps of a LiveView: a text summary and a picture.

The picture is a PNG of each site's histograms over steps with its
percentile bands, inlined in an ``<img>``: no script, so GitHub, nbviewer
and ``nbconvert --to html`` show the training story. A view of a few runs
keeps each run's picture; of more, one picture of them all: each site's
median and each scalar over steps, a line per run in the run's colour, so
that a hundred runs are one picture, not a hundred.
"""

from __future__ import annotations

import base64
import html
import io
import math

import numpy as np

from jaxcapture_nb.core.names import counted, html_name, shown_name
from jaxcapture_nb.runs.rows import bin_of_zero
from jaxcapture_nb.runs.run import Run
from jaxcapture_nb.runs.series import EVALUATION, SiteSeries, kind_label
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.pooling import bands, percentile_column

_MAX_SITES = 12
_GRID = 48  # value rows of the picture


def live_text(run: Run) -> str:
    """A deterministic plain-text summary: sites, steps recorded, first NaN/Inf.

    Example:
      >>> from jaxcapture_nb.runs.stream import Stream
      >>> live_text(Run("", Stream(bins=8, include=None, every=1, keep_steps=10, grads=False)))
      'LiveView: nothing recorded yet'
    """
    with run.reading():
        series = run.sites
        scalars = list(run.scalars)
        found = run.first_nonfinite
        seen = run.steps
        ended_as = run.ended_as
        # A notebook saved while the run went on keeps this picture, and
        # gets no word of how the run ended (its kernel may have died): it
        # says that it is a picture of a run still going.
        going = not run.ended
    if not series and not scalars:
        return "LiveView: nothing recorded yet"
    lines = [
        f"LiveView: {counted(len(series), 'site')}, {counted(seen, 'step')} seen"
        + (f", {ended_as}" if ended_as else "")
        + (", still running when this picture was made: it went on, or stopped, after it" if going else "")
        + (f", scalars: {', '.join(map(shown_name, scalars))}" if scalars else "")
    ]
    if found is not None:
        lines.append(f"first NaN/Inf: {shown_name(found[0])} at step {found[1]}")
    width = max((len(shown_name(s.label)) for s in series), default=0)
    lines += [
        f"  {shown_name(s.label):<{width}}  {kind_label(s.kind):<12}  {counted(s.size, 'step')} kept"
        for s in series
    ]
    return "\n".join(lines)


def over_steps(series: SiteSeries, grid: int = _GRID) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Each kept step's histogram re-binned onto one value grid, normalized per step, its exact zeros apart.

    A step's exact zeros (half a ReLU's outputs) are left out of its column,
    whose shades they would wash out, as the live view leaves them out:
    the picture marks them at 0 on their own.

    Returns:
      (image of shape ``(grid, steps)``, lowest value, highest value, each
      step's share of exact zeros among its finite values).
    """
    n = series.size
    los = series.stats[:n, series.columns.index("lo")].astype(np.float64)
    his = series.stats[:n, series.columns.index("hi")].astype(np.float64)
    # A step with no finite value (only NaN/Inf) has a placeholder range:
    # it must not stretch the axis that the other steps share.
    usable = np.isfinite(los) & np.isfinite(his) & (series.hists[:n].sum(axis=1) > 0)
    lo = float(los[usable].min()) if usable.any() else 0.0
    hi = float(his[usable].max()) if usable.any() else 1.0
    if hi <= lo:
        lo, hi = lo - 0.5, lo + 0.5
    image = np.zeros((grid, n))
    hists, shares = _without_zeros(series)
    for k in np.flatnonzero(usable):
        edges = np.linspace(los[k], his[k], series.bins + 1)
        centres = (edges[:-1] + edges[1:]) / 2
        column, _ = np.histogram(centres, bins=grid, range=(lo, hi), weights=hists[k])
        image[:, k] = np.sqrt(column / max(column.max(), 1))  # a spike does not wash out the rest
    return image, lo, hi, shares


def _without_zeros(series: SiteSeries) -> tuple[np.ndarray, np.ndarray]:
    """The kept steps' histograms without their exact zeros, and each step's share of them.

    A summary counts its zeros in the bin of 0 (see
    ``stats.passes.with_zeros_in_their_bin``); its row holds their percentage
    of all its values.
    """
    n = series.size
    hists = series.hists[:n].astype(np.float64)
    row = {key: series.stats[:n, series.columns.index(key)].astype(np.float64) for key in _ZERO_KEYS}
    finite = hists.sum(axis=1)
    size = finite + row["nan"] + row["posinf"] + row["neginf"]
    zeros = np.nan_to_num(np.round(row["zero_pct"] / 100 * size))
    at = bin_of_zero(row["lo"], row["hi"], series.bins)
    steps = np.arange(n)
    zeros = np.minimum(zeros, hists[steps, at])
    hists[steps, at] -= zeros
    shares = np.divide(zeros, finite, out=np.zeros(n), where=finite > 0)
    return hists, shares


_ZERO_KEYS = ("zero_pct", "nan", "posinf", "neginf", "lo", "hi")


def _evaluations_paired(series: list[SiteSeries]) -> list[SiteSeries]:
    """The series with each site's evaluations right after its training values, to be read side by side.

    Example:
      >>> names = lambda ss: [(s.label, s.kind) for s in ss]
      >>> made = [SiteSeries(label, kind, 4, 2) for label, kind in
      ...         [("a", "Intermediate"), ("b", "Intermediate"), ("a", EVALUATION), ("c", EVALUATION)]]
      >>> names(_evaluations_paired(made))
      [('a', 'Intermediate'), ('a', 'Evaluation'), ('b', 'Intermediate'), ('c', 'Evaluation')]
    """
    trained = {s.label for s in series if s.kind != EVALUATION}
    evaluations = {s.label: s for s in series if s.kind == EVALUATION and s.label in trained}
    paired = []
    for s in series:
        if s.kind == EVALUATION and s.label in trained:
            continue  # placed after its training series
        paired.append(s)
        if s.label in evaluations and s.kind != EVALUATION:
            paired.append(evaluations.pop(s.label))
    return paired


def live_png(run: Run) -> bytes:
    """The histograms over steps of up to twelve sites, and the scalars, as a PNG."""
    with run.reading():
        series = _evaluations_paired([s for s in run.sites if s.size])[:_MAX_SITES]
        scalars = [s for s in run.scalars.values() if s.size]
        panels = [(s, over_steps(s)) for s in series]
        scalar_rows = [(s.label, s.steps[: s.size].copy(), s.stats[: s.size, 0].copy()) for s in scalars]
    count = len(panels) + len(scalar_rows)
    columns = min(3, max(count, 1))
    rows = max(1, math.ceil(count / columns))
    # Imported here: matplotlib takes half a second to import, and a watch
    # that is never drawn as a picture (display=False, a script) never needs it.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.3 * columns, 2.0 * rows), layout="constrained", dpi=80)
    for k, (label, steps, values) in enumerate(scalar_rows):
        ax = figure.add_subplot(rows, columns, k + 1)
        ax.plot(steps, values, color=schema.SERIES_COLOUR, lw=1)
        ax.set_title(shown_name(label), fontsize=8)
        ax.tick_params(labelsize=6)
    for k, (s, (image, lo, hi, zero_shares)) in enumerate(panels, start=len(scalar_rows)):
        ax = figure.add_subplot(rows, columns, k + 1)
        steps = s.steps[: s.size]
        ax.imshow(
            image,
            origin="lower",
            aspect="auto",
            cmap="Blues",
            extent=(float(steps[0]), float(steps[-1]) + 1, lo, hi),
            interpolation="nearest",
        )
        zeroed = zero_shares > 0
        if zeroed.any():  # the exact zeros, apart at 0: the darker, the larger their share
            colours = np.zeros((int(zeroed.sum()), 4))
            colours[:, 3] = 0.3 + 0.7 * zero_shares[zeroed]
            ax.hlines(np.zeros(len(colours)), steps[zeroed], steps[zeroed] + 1, colors=colours, lw=1.5)
        kept = s.stats[: s.size]
        for low, high, alpha in bands(kept, s.columns):
            ax.fill_between(steps, low, high, color=schema.BAND_COLOUR, alpha=alpha, lw=0)
        median = kept[:, percentile_column(schema.MEDIAN, s.columns)]
        ax.plot(steps, median, color=schema.MEDIAN_COLOUR, lw=0.8)
        ax.set_title(f"{shown_name(s.label)} ({kind_label(s.kind)})", fontsize=8)
        ax.tick_params(labelsize=6)
    if not count:
        figure.text(0.5, 0.5, "nothing recorded", ha="center", va="center")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def live_html(run: Run) -> str:
    """Script-free HTML: the text summary and the PNG of :func:`live_png`."""
    picture = base64.b64encode(live_png(run)).decode("ascii")
    summary = html.escape(live_text(run))
    return (
        f'<div class="jcnb-live-static"><pre>{summary}</pre>'
        f'<img alt="histograms over steps" src="data:image/png;base64,{picture}"/></div>'
    )


_MAX_LEGEND = 10  # runs named in the picture's legend; the text lists them all
# Up to this many runs, each keeps its own picture (histograms over steps, bands).
RUNS_PICTURED_APART = 4


def overlay_png(runs: list[Run]) -> bytes:
    """Each scalar and the median of up to twelve sites over steps, a line per run in its colour, as a PNG."""
    scalars: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    sites: dict[tuple[str, str], list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for k, run in enumerate(runs):
        with run.reading():
            for s in run.scalars.values():
                if s.size:
                    scalars.setdefault(s.label, []).append(
                        (k, s.steps[: s.size].copy(), s.stats[: s.size, 0].copy())
                    )
            for s in run.sites:
                if s.size:
                    median = s.stats[: s.size, percentile_column(schema.MEDIAN, s.columns)].copy()
                    sites.setdefault((s.label, s.kind), []).append((k, s.steps[: s.size].copy(), median))
    panels = [(shown_name(label), lines) for label, lines in scalars.items()]
    panels += [
        (f"{shown_name(label)} ({kind_label(kind)}), median", lines)
        for (label, kind), lines in list(sites.items())[:_MAX_SITES]
    ]
    columns = min(3, max(len(panels), 1))
    rows = max(1, math.ceil(len(panels) / columns))
    from matplotlib.figure import Figure  # imported here, as in live_png

    # Spaced by hand: a constrained layout took half the time of the picture of a hundred runs.
    height = 2.0 * rows + 0.5
    figure = Figure(figsize=(3.3 * max(columns, 2), height), dpi=80)  # room for the legend
    figure.subplots_adjust(
        left=0.07, right=0.98, bottom=0.35 / height, top=1 - 0.85 / height, hspace=0.55, wspace=0.3
    )
    from matplotlib.collections import LineCollection

    colours = schema.MODE_COLOURS
    for k, (title, lines) in enumerate(panels):
        ax = figure.add_subplot(rows, columns, k + 1)
        # One collection of every run's line: a hundred plot() calls took most of the picture's time.
        drawn = [(run, steps, values) for run, steps, values in lines if len(steps) > 1]
        ax.add_collection(
            LineCollection(
                [np.column_stack([steps, values]) for _, steps, values in drawn],
                colors=[colours[run % len(colours)] for run, _, _ in drawn],
                linewidths=0.8,
            )
        )
        for run, steps, values in lines:
            if len(steps) == 1:  # a run of one recorded step is a point
                ax.plot(steps, values, color=colours[run % len(colours)], marker="o", ms=3)
        ax.autoscale_view()
        _readable_y(ax, np.concatenate([values for _, _, values in lines]))
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=6)
    if panels:
        from matplotlib.lines import Line2D

        named = [
            Line2D([], [], color=colours[k % len(colours)], label=shown_name(name))
            for k, name in enumerate(run.name for run in runs[:_MAX_LEGEND])
        ]
        if len(runs) > _MAX_LEGEND:
            named.append(Line2D([], [], color="none", label=f"and {len(runs) - _MAX_LEGEND} more"))
        figure.legend(handles=named, loc="upper center", ncols=min(len(named), 6), fontsize=7, frameon=False)
    else:
        figure.text(0.5, 0.5, "nothing recorded", ha="center", va="center")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _readable_y(ax, values: np.ndarray) -> None:
    """Plain tick labels, and a visible span around lines that are flat but for rounding."""
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    finite = values[np.isfinite(values)].astype(np.float64)
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        middle, least = (low + high) / 2, max(abs(low), abs(high)) * 1e-3 or 0.5
        if high - low < least:
            ax.set_ylim(middle - least, middle + least)


def runs_html(runs: list[Run], text: str) -> str:
    """Script-free HTML of a view of several runs: ``text`` and each run's picture, or, for many runs, one of all."""
    if len(runs) <= RUNS_PICTURED_APART:
        return "".join(f"<div><b>run {html_name(run.name)}</b></div>{live_html(run)}" for run in runs)
    picture = base64.b64encode(overlay_png(runs)).decode("ascii")
    return (
        f'<div class="jcnb-live-static"><pre>{html.escape(text)}</pre>'
        f'<img alt="each run over steps" src="data:image/png;base64,{picture}"/></div>'
    )
