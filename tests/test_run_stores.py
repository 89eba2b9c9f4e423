"""A store of runs is one reader: overlay_runs and compare_runs read its runs as they read TensorBoard logs."""

import numpy as np
import pytest

from jaxcapture_nb import Run, compare_runs, overlay_runs, read_run, summarize, watch
from jaxcapture_nb.runs import sources
from jaxcapture_nb.runs.sources import RunReader
from jaxcapture_nb.runs.stream import Stream

BINS = 16


class MemoryStore:
    """Runs kept in a dict: ``memory://name`` is one run, ``memory://`` all of them."""

    def __init__(self, runs: dict[str, list[tuple[dict[str, np.ndarray], float]]]):
        self.runs = runs  # per run, per step: each site's values, and the loss

    def reads(self, source):
        return isinstance(source, str) and source.startswith("memory://")

    def runs_in(self, source):
        if source != "memory://":
            raise FileNotFoundError(f"{source} holds one run, not several")
        return {name: f"memory://{name}" for name in self.runs}

    def read(self, source, *, bins, keep_steps):
        stream = Stream(bins=bins or BINS, include=None, every=1, keep_steps=keep_steps, grads=False)
        for step, (sites, loss) in enumerate(self.runs[source.removeprefix("memory://")]):
            for order, (name, values) in enumerate(sites.items()):
                series = stream.site_series(("memory", name), name, "Intermediate")
                series.shape = values.shape
                stream.add_row(series, step, order, *series.row_of(summarize(values, bins=stream.bins)))
            stream.add_scalar_row(stream.scalar_series("loss"), step, loss)
        stream.ended = True
        return stream


def run(scale: float, steps: int = 4) -> list[tuple[dict[str, np.ndarray], float]]:
    rng = np.random.default_rng(int(scale))
    return [
        ({"embed": rng.normal(size=(4, 8)) * scale, "logits": rng.normal(size=(4, 3))}, 1.0 / (step + 1))
        for step in range(steps)
    ]


@pytest.fixture
def store(monkeypatch):
    store = MemoryStore({"narrow": run(1.0), "wide": run(5.0)})
    monkeypatch.setattr(sources, "READERS", [store, *sources.READERS])
    return store


def test_a_store_is_a_run_reader(store):
    assert isinstance(store, RunReader)
    assert sources.reader_of("memory://wide") is store
    assert type(sources.reader_of("runs/lr-1e-3")).__name__ == "TensorBoardReader"


def test_overlay_runs_lists_and_reads_a_stores_runs(store):
    view = overlay_runs("memory://")
    assert [run.name for run in view.runs] == ["narrow", "wide"]
    assert [run.source for run in view.runs] == ["memory://narrow", "memory://wide"]
    streams = {run.name: run.stream for run in view.runs}
    for name, stream in streams.items():
        assert stream.ended
        embed = stream.series[("memory", "embed")]
        assert embed.steps[: embed.size].tolist() == [0, 1, 2, 3]
        want = summarize(store.runs[name][3][0]["embed"], bins=BINS)
        assert embed.stats[3, embed.columns.index("max")] == pytest.approx(float(want.max))
        loss = stream.scalars["loss"]
        np.testing.assert_array_equal(
            loss.stats[: loss.size, loss.columns.index("mean")], np.float32([1, 1 / 2, 1 / 3, 1 / 4])
        )


def test_compare_runs_compares_a_stores_runs_with_each_other(store):
    comparison = compare_runs({"narrow": "memory://narrow", "wide": "memory://wide"})
    assert comparison.modes == ["narrow", "wide"]
    assert comparison.settings == {"narrow": "step 3", "wide": "step 3"}
    # The embedding, five times wider in the second run, shifts most.
    assert [s.site for s in comparison.sites] == ["embed", "logits"]
    embed = comparison.sites[0]
    want = [summarize(store.runs[name][3][0]["embed"], bins=BINS) for name in comparison.modes]
    assert embed.stats[:, 1] == pytest.approx([float(w.std) for w in want], rel=1e-6)


def test_read_run_makes_one_public_run_of_a_store_a_log_and_a_watch(store, tmp_path):
    saved = read_run("memory://wide")
    assert isinstance(saved, Run) and saved.ended
    assert (saved.name, saved.source, saved.steps) == ("wide", "memory://wide", 4)
    assert [s.label for s in saved.sites] == ["embed", "logits"] and list(saved.scalars) == ["loss"]
    with watch(keep_steps=10, log_dir=tmp_path / "log") as w:
        w.update(0, {"h": summarize(np.arange(8.0))})
        w.log(step=0, loss=0.5)
        live = read_run(w, name="now")
        assert (live.name, live.source, live.stream) == ("now", w, w.stream) and not live.ended
        assert w.overlays == [overlay_runs([live])]  # a view of the run is fed as the watch records
    assert live.ended  # the same rows, which the watch has finished
    log = read_run(tmp_path / "log")
    assert log.name == "log" and [s.label for s in log.sites] == ["h"] and log.scalars["loss"].size == 1
    assert read_run(log, name="again").stream is log.stream
    with pytest.raises(TypeError, match="expected a Watch"):
        read_run(3)
