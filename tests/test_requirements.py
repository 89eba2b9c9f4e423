"""pip resolves the declared requirements to a Flax and JAX pair the tests run on.

Flax up to 0.12.8 fails to import on JAX 0.11.1 or later although its metadata allows it,
so a range that lets pip pick such a pair installs a package that cannot be imported. Each
declared Python version is resolved with pip's own resolver, and every pick must be one of
the stacks the README's test command runs: Python 3.11 with the machine's own interpreter,
and the newest stack on Python 3.13 (``scripts/test_newest.sh``).
"""

import json
import pathlib
import subprocess
import sys
import tomllib

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parents[1]

# (flax, jax, jaxlib) of each stack the test command runs every test on.
TESTED_STACKS = {
    ("0.12.8", "0.10.2", "0.10.2"),
    ("0.12.12", "0.12.0.1", "0.12.0.1"),
}
DECLARED_PYTHONS = ("3.11", "3.12", "3.13", "3.14")


def declared_requirements(python_version: str) -> list[str]:
    """The package's requirements for ``python_version``, markers evaluated for it.

    ``pip --python-version`` filters candidates by their Requires-Python but evaluates
    environment markers for the interpreter pip runs on, so the markers are evaluated here.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    environment = default_environment() | {
        "python_version": python_version,
        "python_full_version": f"{python_version}.0",
    }
    picked = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            requirement.marker = None
            picked.append(str(requirement))
    return picked


def resolve(python_version: str, tmp_path: pathlib.Path) -> dict[str, str]:
    """The versions pip's resolver picks for ``python_version``, from wheels only."""
    report = tmp_path / f"report-{python_version}.json"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed"]
    command += ["--only-binary=:all:", f"--python-version={python_version}"]
    command += ["--target", str(tmp_path / "target"), "--report", str(report)]
    done = subprocess.run(command + declared_requirements(python_version), capture_output=True, text=True)
    assert done.returncode == 0, f"pip found no install for Python {python_version}:\n{done.stderr}"
    installs = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installs}


def test_requires_python_names_the_declared_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # jaxlib has no wheel for Python 3.10 at or above the JAX the package needs.
    assert project["requires-python"] == ">=3.11"


@pytest.mark.parametrize("python_version", DECLARED_PYTHONS)
def test_pip_picks_a_tested_stack(python_version, tmp_path):
    picked = resolve(python_version, tmp_path)
    stack = (picked["flax"], picked["jax"], picked["jaxlib"])
    assert stack in TESTED_STACKS, f"Python {python_version}: pip picks flax, jax, jaxlib {stack}"


def test_this_stack_is_a_tested_one():
    """The stack running these tests is one the picks above are checked against."""
    import flax
    import jax
    import jaxlib

    assert (flax.__version__, jax.__version__, jaxlib.__version__) in TESTED_STACKS
