"""Summaries of arrays sharded over 8 devices, on explicit and automatic meshes.

JAX fixes its device count when it starts, and this process already runs it
on one device, so ``sharding_worker.py`` runs every case in a process of its
own with 8 simulated CPU devices; each test reads its case's result. A case
checks its summaries against NumPy on the whole array, and that the compiled
program has no all-gather: each device counts its own shard.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sharding_worker import CASES

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sharding") / "results.json"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    worker = [sys.executable, str(ROOT / "tests" / "sharding_worker.py"), str(out)]
    done = subprocess.run(worker, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())["results"]


@pytest.mark.parametrize("case", CASES)
def test_sharded_values_are_summarized_in_place(results, case):
    assert results.get(case) == "ok", results.get(case, "the worker did not run this case")
