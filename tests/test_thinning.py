"""A long log thinned as it is read opens exactly as the whole log does, holding a few times what its view keeps."""

import math
import pathlib

import numpy as np
import pytest

from jaxcapture_nb.runs.row_grid import kept_appends
from jaxcapture_nb.runs.series import SiteSeries
from jaxcapture_nb.runs.tensorboard import event_scan
from jaxcapture_nb.runs.tensorboard.reader import read_file
from jaxcapture_nb.runs.tensorboard.thinning import stride_bound

pytest.importorskip("tensorboard")
from jaxcapture_nb.runs.saved import read_log  # noqa: E402
from jaxcapture_nb.runs.tensorboard.writer import LogWriter  # noqa: E402


@pytest.mark.parametrize(
    ("capacity", "counts"), [(2, range(1, 1500)), (5, range(1, 2500)), (64, range(1, 40_000, 97))]
)
def test_every_value_a_grid_keeps_but_its_last_lies_on_the_bound_stride(capacity, counts):
    for count in counts:
        bound = int(stride_bound(np.array([count]), capacity)[0])
        assert all(k % bound == 0 for k in kept_appends(count, capacity)[:-1]), count


def write(folder: pathlib.Path, steps: int, sites: int = 3, every: int = 3) -> None:
    """A log as watch(every=every, log_dir=folder) writes it, with a NaN in the loss and a site's NaN count."""
    rng = np.random.default_rng(1)
    writer = LogWriter(folder)
    series = [SiteSeries(f"blocks.{i}.residual", "Intermediate", 16, 1) for i in range(sites)]
    loss = SiteSeries("loss", "scalar", 1, 1)
    columns = series[0].columns
    for step in range(steps):
        if step % every == 0:
            for k, s in enumerate(series):
                stats = np.zeros(len(columns), np.float32)
                stats[[columns.index(c) for c in ("mean", "std", "min", "max")]] = rng.normal(size=4)
                stats[[columns.index("lo"), columns.index("hi")]] = (-3.0, 3.0)
                stats[columns.index("nan")] = 2.0 if (k, step) == (1, 300) else 0.0
                writer.add_rows([s], step, stats[None], rng.integers(0, 100, (1, 16)).astype(np.int32))
        stats = np.zeros(len(loss.columns), np.float32)
        stats[loss.columns.index("mean")] = math.nan if step == 1001 else 1.0 / (step + 1)
        writer.add_rows([loss], step, stats[None], np.zeros((1, 1), np.int32))
    writer.close()


def rows(stream) -> dict:
    return {
        # NaN as a number that compares equal to itself
        (kind, key): (
            s.steps[: s.size].tolist(),
            np.nan_to_num(s.stats[: s.size], nan=-1e30).tolist(),
            s.hists[: s.size].tolist(),
        )
        for kind, table in (("site", stream.series), ("scalar", stream.scalars))
        for key, s in table.items()
    } | {"steps seen": stream.steps_seen}


def test_a_thinned_log_opens_as_the_whole_log_does(tmp_path, monkeypatch):
    write(tmp_path / "run", steps=3000)
    (path,) = (tmp_path / "run").iterdir()
    monkeypatch.setattr(event_scan, "WINDOW", 20_000)  # many windows
    thinned = read_file(path, [], keep=16)
    assert all(found.ordinals is not None for found in thinned.scalars.values())
    assert max(len(found.steps) for found in thinned.scalars.values()) <= 4 * 16 + 1
    assert (
        thinned.scalars["loss"].count == 3000 and thinned.scalars["loss"].first_step(nonfinite=True) == 1001
    )
    opened = read_log(tmp_path / "run", keep_steps=16)
    scan_file = event_scan.scan_file
    monkeypatch.setattr(event_scan, "scan_file", lambda data, window=None, keep=None: scan_file(data, window))
    whole = read_log(tmp_path / "run", keep_steps=16)
    assert rows(opened) == rows(whole)
    assert opened.first_nonfinite == whole.first_nonfinite == ("blocks.1.residual", 300)


def test_a_log_whose_steps_go_back_is_read_whole(tmp_path):
    writer = LogWriter(tmp_path)
    loss = SiteSeries("loss", "scalar", 1, 1)
    for step in [*range(100), *range(50)]:  # a run restarted in the same file
        stats = np.zeros(len(loss.columns), np.float32)
        writer.add_rows([loss], step, stats[None], np.zeros((1, 1), np.int32))
    writer.close()
    (path,) = tmp_path.iterdir()
    found = read_file(path, [], keep=4).scalars["loss"]
    assert found.ordinals is None and len(found.steps) == 150
