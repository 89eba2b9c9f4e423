"""The Flax behaviour the package relies on, each assumption tested on its own, and the self-check."""

import pathlib

import flax
import jax.numpy as jnp
import pytest
from flax import linen as nn
from flax import nnx
from models import SowingLinear
from packaging.requirements import Requirement

from jaxcapture_nb import FlaxCompatibilityError, capture
from jaxcapture_nb.upstream import flax_check, flax_internals

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Flax 0.12.11 added sow's and perturb's capture_noop and the nnx_sow_capture_noop flag.
needs_capture_noop = pytest.mark.skipif(
    not hasattr(flax.config, "nnx_sow_capture_noop"),
    reason=f"flax {flax.__version__} has no capture_noop (added in Flax 0.12.11)",
)


@pytest.fixture
def fresh_check():
    """Runs the test with the once-per-process check forgotten, before and after."""
    flax_check.check.cache_clear()
    yield
    flax_check.check.cache_clear()


@pytest.mark.parametrize("assumption", list(flax_check.ASSUMPTIONS))
def test_each_assumption_holds_for_the_installed_flax(assumption):
    assert flax_check.ASSUMPTIONS[assumption]()


def test_the_check_passes_for_the_installed_flax(fresh_check):
    flax_check.check()


def assert_names_the_tested_releases(message: str) -> None:
    assert f"flax {flax_check.flax_version()} does not show" in message
    assert f"tested with flax {flax_internals.TESTED_FLAX} on Python 3." in message
    assert f"pip install '{flax_internals.FLAX_REQUIREMENT}'" in message


def test_a_flax_with_a_functional_sow_fails_naming_it(monkeypatch, fresh_check):
    def functional_sow(self, variable_type, name, value, **kwargs):
        return value  # handed back to the caller; nothing is stored in the module

    monkeypatch.setattr(nnx.Module, "sow", functional_sow)
    with pytest.raises(FlaxCompatibilityError) as raised:
        flax_check.check()
    message = str(raised.value)
    assert "Module.sow goes through a module's __captures__ attribute" in message
    assert "Module.sow no longer goes through __captures__, as a functional sow" in message
    assert "this jaxcapture_nb release does not support the functional sow" in message
    assert_names_the_tested_releases(message)


def test_a_flax_whose_perturb_ignores_captures_fails_naming_the_assumption_and_versions(
    monkeypatch, fresh_check
):
    def perturb_nothing(self, name, value, *args, **kwargs):
        return value

    monkeypatch.setattr(nnx.Module, "perturb", perturb_nothing)
    with pytest.raises(FlaxCompatibilityError) as raised:
        flax_check.check()
    message = str(raised.value)
    assert "Module.sow and Module.perturb store into the module's __captures__ Variables." in message
    assert "functional sow" not in message
    assert_names_the_tested_releases(message)


@needs_capture_noop
def test_the_check_tries_sow_with_capture_noop_on_and_off(monkeypatch, fresh_check):
    sow = nnx.Module.sow

    def sow_skipping_captures_when_noop(self, *args, capture_noop=None, **kwargs):
        if capture_noop:
            return False
        return sow(self, *args, capture_noop=capture_noop, **kwargs)

    monkeypatch.setattr(nnx.Module, "sow", sow_skipping_captures_when_noop)
    with pytest.raises(FlaxCompatibilityError, match="no longer goes through __captures__"):
        flax_check.check()


def test_a_probe_that_raises_counts_as_a_broken_assumption(monkeypatch, fresh_check):
    def view_info_gone(*args, **kwargs):
        raise AttributeError("module 'flax.nnx' has no attribute 'view_info'")

    monkeypatch.setattr(nnx, "view_info", view_info_gone)
    with pytest.raises(FlaxCompatibilityError, match="nnx.view_info prints.*AttributeError"):
        flax_check.check()


def test_a_capture_checks_first_and_leaves_the_model_untouched(monkeypatch, fresh_check):
    monkeypatch.setitem(flax_check.ASSUMPTIONS, "a behaviour this Flax lacks", lambda: False)
    model = SowingLinear(nnx.Rngs(0))
    with pytest.raises(FlaxCompatibilityError, match="a behaviour this Flax lacks"), capture(model):
        pass
    before = {path: dict(vars(m)) for path, m in nnx.iter_modules(model)}
    with pytest.raises(FlaxCompatibilityError, match="a behaviour this Flax lacks"), capture(model):
        pass
    assert {path: dict(vars(m)) for path, m in nnx.iter_modules(model)} == before
    assert not any(flax_internals.CAPTURES in vars(type(m)) for _, m in nnx.iter_modules(model))
    monkeypatch.delitem(flax_check.ASSUMPTIONS, "a behaviour this Flax lacks")
    flax_check.check.cache_clear()
    with capture(model) as cap:
        model(jnp.ones((1, 2)))
    assert [r.site for r in cap.records] == ["y"]


@pytest.fixture
def capture_noop_flag():
    """Flax's nnx_sow_capture_noop on for the test: sow and perturb do nothing outside a capture."""
    before = flax.config.nnx_sow_capture_noop
    flax.config.update("nnx_sow_capture_noop", True)
    yield
    flax.config.update("nnx_sow_capture_noop", before)


@needs_capture_noop
def test_the_check_and_a_capture_pass_with_the_capture_noop_flag_on(capture_noop_flag, fresh_check):
    flax_check.check()
    model = SowingLinear(nnx.Rngs(0))
    model(jnp.ones((1, 2)))  # outside a capture: stores nothing
    assert "y" not in vars(model)
    with capture(model, methods=True) as cap:
        model(jnp.ones((1, 2)))
    assert [r.site for r in cap.records] == ["linear.__call__", "y", "__call__"]


def test_a_linen_capture_checks_too(monkeypatch, fresh_check):
    monkeypatch.setitem(flax_check.ASSUMPTIONS, "a behaviour this Flax lacks", lambda: False)
    module = nn.Dense(2)
    with pytest.raises(FlaxCompatibilityError), capture(module):
        pass
    assert "apply" not in vars(module)


def test_pyproject_declares_the_tested_ranges_and_the_installed_flax_is_in_this_pythons():
    pyproject = (ROOT / "pyproject.toml").read_text()
    for requirement, marker, _ in flax_internals.FLAX_RANGES:
        assert f'"{requirement}; {marker}",' in pyproject
    assert Requirement(flax_internals.FLAX_REQUIREMENT).specifier.contains(flax_check.flax_version())
