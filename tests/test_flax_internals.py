"""The Flax behaviour the package relies on, each assumption tested on its own, and the self-check."""

import pathlib

import jax.numpy as jnp
import pytest
from flax import linen as nn
from flax import nnx

from jaxcapture_nb import FlaxCompatibilityError, capture
from jaxcapture_nb._backends import flax_internals

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_check():
    """Runs the test with the once-per-process check forgotten, before and after."""
    flax_internals.check.cache_clear()
    yield
    flax_internals.check.cache_clear()


@pytest.mark.parametrize("assumption", list(flax_internals.ASSUMPTIONS))
def test_each_assumption_holds_for_the_installed_flax(assumption):
    assert flax_internals.ASSUMPTIONS[assumption]()


def test_the_check_passes_for_the_installed_flax(fresh_check):
    flax_internals.check()


def test_a_flax_whose_sow_ignores_captures_fails_naming_the_assumption_and_versions(monkeypatch, fresh_check):
    def sow_into_attributes(self, variable_type, name, value, **kwargs):
        setattr(self, name, variable_type((value,)))

    monkeypatch.setattr(nnx.Module, "sow", sow_into_attributes)
    with pytest.raises(FlaxCompatibilityError) as raised:
        flax_internals.check()
    message = str(raised.value)
    assert "Module.sow and Module.perturb store into the module's __captures__" in message
    assert f"flax {flax_internals.flax_version()}" in message
    assert "0.12.6 to 0.12.8" in message and "pip install 'flax>=0.12.6,<0.12.9'" in message


def test_a_probe_that_raises_counts_as_a_broken_assumption(monkeypatch, fresh_check):
    def view_info_gone(*args, **kwargs):
        raise AttributeError("module 'flax.nnx' has no attribute 'view_info'")

    monkeypatch.setattr(nnx, "view_info", view_info_gone)
    with pytest.raises(FlaxCompatibilityError, match="nnx.view_info prints.*AttributeError"):
        flax_internals.check()


class Tiny(nnx.Module):
    def __init__(self):
        self.linear = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, "y", y)
        return y


def test_a_capture_checks_first_and_leaves_the_model_untouched(monkeypatch, fresh_check):
    monkeypatch.setitem(flax_internals.ASSUMPTIONS, "a behaviour this Flax lacks", lambda: False)
    model = Tiny()
    with pytest.raises(FlaxCompatibilityError, match="a behaviour this Flax lacks"), capture(model):
        pass
    assert not any(flax_internals.has_captures(m) for _, m in nnx.iter_modules(model))
    monkeypatch.delitem(flax_internals.ASSUMPTIONS, "a behaviour this Flax lacks")
    flax_internals.check.cache_clear()
    with capture(model) as cap:
        model(jnp.ones((1, 2)))
    assert [r.site for r in cap.records] == ["y"]


def test_a_linen_capture_checks_too(monkeypatch, fresh_check):
    monkeypatch.setitem(flax_internals.ASSUMPTIONS, "a behaviour this Flax lacks", lambda: False)
    module = nn.Dense(2)
    with pytest.raises(FlaxCompatibilityError), capture(module):
        pass
    assert "apply" not in vars(module)


def test_pyproject_declares_the_tested_range():
    assert f'"{flax_internals.FLAX_REQUIREMENT}",' in (ROOT / "pyproject.toml").read_text()
