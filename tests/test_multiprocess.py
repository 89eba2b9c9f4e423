"""Two processes of one ``jax.distributed`` program, 4 CPU devices each, record the same rows.

Each case runs in both processes of one launch (see multiprocess_worker.py);
every process writes what it recorded and the tests compare.
"""

import ast
import json
import math
import os
import pathlib
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from multiprocess_worker import GLOO_HANGS_WITH_STEPS_IN_FLIGHT, STEPS, summary_data

from jaxcapture_nb import summarize

WORKER = pathlib.Path(__file__).with_name("multiprocess_worker.py")
CASES = (
    "summarize",
    "watch_jit",
    "watch_eager",
    "watch_update",
    "watch_grads",
    "capture_all",
    "capture_last",
    "capture_summary",
    "capture_grads",
)
# Two JAX processes start in a few seconds; the cases compile a few steps each
# (about 100 s in all on a busy 2-core machine).
TIMEOUT_S = 240
# Before JAX 0.12.0, gloo CPU collectives can deadlock when two processes run
# independent collective programs back to back, even with each step waited for:
# a loop of jax.jit steps with an eager op and a small reduction after each step
# hangs without any jaxcapture_nb code (JAX 0.10.2). There a launch that hangs is
# killed and started again; on later JAX a hang fails the tests at once, as does a
# launch that fails any other way.
ATTEMPTS = 3 if GLOO_HANGS_WITH_STEPS_IN_FLIGHT else 1


class Hung(AssertionError):
    """A process of the launch was still running at its deadline, and was killed."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(cases, out_dir: pathlib.Path, timeout_s: float = TIMEOUT_S) -> list[dict]:
    """Runs ``cases`` in two processes of one distributed program; each one's results.

    A process still running after ``timeout_s`` (a hung collective) is
    killed, and the run fails with what both processes printed.
    """
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join([str(WORKER.parent), os.environ.get("PYTHONPATH", "")]),
    }
    port = free_port()
    logs = [open(out_dir / f"{i}.log", "w+") for i in range(2)]  # noqa: SIM115 - closed below
    processes = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(port), str(i), str(out_dir), *cases],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for i, log in enumerate(logs)
    ]
    deadline = time.monotonic() + timeout_s
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            codes.append("timed out")
    output = []
    for i, log in enumerate(logs):
        log.seek(0)
        output.append(f"--- process {i}: {codes[i]}\n{log.read()[-4000:]}")
        log.close()
    if "timed out" in codes:
        raise Hung("\n".join(output))
    assert codes == [0, 0], "\n".join(output)
    return [json.loads((out_dir / f"{i}.json").read_text()) for i in range(2)]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[dict]:
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return run_processes(CASES, tmp_path_factory.mktemp("multiprocess"))
        except Hung:
            if attempt == ATTEMPTS:
                raise


def test_summaries_of_global_arrays_are_the_same_on_both_processes_and_match_numpy(results):
    first, second = (r["summarize"] for r in results)
    assert first == second
    for name, data in (("made", summary_data()), ("put", summary_data(nan=False))):
        finite = data[np.isfinite(data)]
        got = first[name]
        stats, counts = np.array(got["stats"], np.float32), np.array(got["counts"])
        assert got["shape"] == [64, 12]
        # count, NaNs, +Infs, -Infs, zeros; then a histogram like one process's.
        assert counts[:5].tolist() == [finite.size, np.isnan(data).sum(), 1, 0, 64]
        assert counts[5:].tolist() == summarize(data, bins=16).hist.tolist()
        # min, max, mean, std, over the finite values.
        assert stats[:2].tolist() == [finite.min(), finite.max()]
        np.testing.assert_allclose(stats[2:4], [finite.mean(), finite.std()], rtol=1e-5)


@pytest.mark.parametrize("case", ["watch_jit", "watch_eager", "watch_update", "watch_grads"])
def test_a_watch_records_the_same_history_on_both_processes(results, case):
    first, second = (r[case] for r in results)
    assert first == second
    assert first, "nothing recorded"
    # The eager case's forward passes between training steps are evaluations, sites of their own.
    if case == "watch_eager":
        assert {ast.literal_eval(key)[1] for key in first if "scalar" not in key} == {
            "Intermediate",
            "Evaluation",
        }
    for series in first.values():
        assert series["steps"] == list(range(STEPS))
        assert all(math.isfinite(row[0]) for row in series["stats"])  # a mean each step


def test_watched_sites_include_gradients_and_logged_scalars(results):
    assert set(results[0]["watch_grads"]) == {
        "((), 'Perturbation', 'h')",
        "((), 'Intermediate', 'act')",
        "((), 'Intermediate', 'grid')",
        "((), 'Gradient', 'h')",
        "('scalar', 'loss')",
    }
    assert set(results[0]["watch_update"]) == {
        "('update', 'input')",
        "('update', 'output')",
        "('update', 'loss')",
        "('scalar', 'loss')",
        "('scalar', 'per_example')",
    }


@pytest.mark.parametrize("keep", ["all", "last", "summary"])
def test_a_capture_builds_its_table_and_widget_on_both_processes(results, keep):
    first, second = (r[f"capture_{keep}"] for r in results)
    for key in ("table", "sites", "stats", "hists", "first_nonfinite", "plotted", "repr"):
        assert first[key] == second[key], key
    assert "gradient" in first["table"]
    # The eager call's NaN input reaches the hidden layer first.
    assert first["first_nonfinite"] == ["h", "Perturbation"]
    assert first["plotted"] == len(first["sites"])


@pytest.mark.parametrize("keep", ["all", "last"])
def test_a_value_split_across_processes_is_drawn_from_this_processs_part(results, keep):
    # Values of the eager call are split over the batch; the compiled steps
    # left theirs replicated, and callbacks brought the perturbed values and
    # gradients whole: every process has those.
    for process, result in enumerate(results):
        result = result[f"capture_{keep}"]
        rows = f"{16 * process}:{16 * (process + 1)}"
        split = {i for i, note in enumerate(result["notes"]) if "split across 2 processes" in note}
        assert split and all(f"this process's part [{rows}, 0:" in result["notes"][i] for i in split)
        for site, index, shape, note in result["heatmaps"]:
            if len(index) == 0:  # the 2-D values: this process's 16 rows, or all 32
                assert (shape, note) == ([16 if site in split else 32, 16], "")
            elif site in split and index != [[0], [20]][process]:
                assert (shape, note) == (
                    [],
                    f"No heatmap: index {index[0]} of axis 0 is held by another process.",
                )
            else:
                assert (shape, note) == ([4, 4], "")


def test_a_summary_only_capture_has_no_heatmaps_but_the_same_rows(results):
    first = results[0]["capture_summary"]
    assert all(shape == [] and "keep='summary'" in note for *_, shape, note in first["heatmaps"])


def test_capture_grads_records_the_same_gradients_on_both_processes(results):
    first, second = (r["capture_grads"]["table"] for r in results)
    assert first == second and "gradient" in first
