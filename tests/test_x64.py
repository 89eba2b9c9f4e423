"""With ``jax_enable_x64`` on: float64, int64 and uint64 summaries end to end.

x64 is process-wide and must be set before any JAX computation, so the
checks in x64_checks.py run together in one subprocess; each test here
reports one of them, with the subprocess's traceback when it failed.
"""

import json
import os
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import pytest
from x64_checks import BINS, CHECKS, float32_cases, summary_bits

from jaxcapture_nb import summarize

WORKER = pathlib.Path(__file__).with_name("x64_checks.py")
# Compiling the checks' programs takes about a minute on a busy 2-core machine.
TIMEOUT_S = 600


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("x64") / "report.json"
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, str(WORKER), str(out)],
        cwd=WORKER.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if done.returncode or not out.exists():
        pytest.fail(f"the x64 checks did not finish (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_with_x64(report, name):
    result = report[name]
    if result != "ok":
        pytest.fail(f"{name}, run with jax_enable_x64 on:\n{result}", pytrace=False)


def test_narrow_types_give_the_same_summaries_bit_for_bit_with_x64_on_and_off(report):
    with_x64 = report["float32 summaries"]
    for label, x in float32_cases().items():
        without = summary_bits(summarize(jnp.asarray(x), bins=BINS))
        assert tuple(with_x64[label][:2]) == without[:2] and with_x64[label][2] == without[2], label
