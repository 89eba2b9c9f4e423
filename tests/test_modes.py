"""view_options() and with_mode(): discovering modes and making views, on real Flax models."""

import jax
import jax.numpy as jnp
import pytest
from flax import linen as nn
from flax import nnx
from models import ModeNet

from jaxcapture_nb import ModeError, view_options, with_mode


@pytest.fixture
def model():
    return ModeNet(nnx.Rngs(0))


def options_by_class(model):
    return {g.name: {o.name: o for o in g.options} for g in view_options(model)}


def test_every_class_offering_modes_is_listed_with_its_options(model):
    found = options_by_class(model)
    assert sorted(found) == ["BatchNorm", "Dropout", "Gate", "MultiHeadAttention", "Scaled"]
    assert list(found["MultiHeadAttention"]) == ["deterministic", "decode", "batch_size", "max_length"]
    attention = found["MultiHeadAttention"]
    assert attention["decode"].kind == "bool" and attention["decode"].current is False
    assert attention["batch_size"].kind == "shape" and attention["max_length"].kind == "int"
    assert found["Dropout"]["deterministic"].doc == "if True, disables dropout masking."
    assert found["BatchNorm"]["use_running_average"].via == "view"


def test_a_set_view_with_an_incomplete_docstring_falls_back_to_its_signature(model):
    with pytest.raises(KeyError):
        nnx.view_info(model, only=type(model.gate))  # upstream's behaviour
    gate = options_by_class(model)["Gate"]
    assert list(gate) == ["closed", "scale"]
    assert gate["scale"].kind == "float" and gate["scale"].doc == ""


def test_a_user_module_without_set_view_offers_its_mode_attribute(model):
    scaled = options_by_class(model)["Scaled"]
    assert list(scaled) == ["deterministic"] and scaled["deterministic"].via == "attribute"


def test_presets_set_what_train_and_eval_would_and_never_touch_the_model(model):
    view = with_mode(model, "eval")
    assert view.dropout.deterministic and view.bn.use_running_average and view.attention.deterministic
    assert view.scaled.deterministic  # through nnx.with_attributes
    assert not model.dropout.deterministic and not model.scaled.deterministic
    reference = nnx.clone(model)
    reference.eval()
    x = jax.random.normal(jax.random.key(1), (2, 3, 4))
    assert jnp.allclose(view(x), reference(x))


def test_a_view_shares_the_models_variables(model):
    view = with_mode(model, "train")
    assert view.linear.kernel is model.linear.kernel
    view(jnp.ones((2, 3, 4)))  # a train-mode call updates the shared batch statistics
    assert not jnp.allclose(model.bn.mean[...], 0.0)


def test_only_limits_the_modules_a_mode_sets(model):
    view = with_mode(model, {"deterministic": True}, only=nnx.Dropout)
    assert (
        view.dropout.deterministic and not view.scaled.deterministic and view.attention.deterministic is None
    )


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("testing", "unknown mode 'testing'"),
        ({"determinstic": True}, "'determinstic' is not an option of the modules set"),
        ({"a": 1, "b": 2}, "'a', 'b' are not options"),
        ({"decode": True}, "give batch_size= and max_length="),
        ({"decode": True, "batch_size": 2}, "give batch_size= and max_length="),
        (3, "a mode is 'train', 'eval' or a dict"),
    ],
)
def test_invalid_modes_say_what_is_wrong_and_how_to_fix_it(model, mode, message):
    with pytest.raises(ModeError, match=message):
        with_mode(model, mode)
    assert model.attention.cached_key is None and not model.attention.decode


def test_only_limits_the_options_a_mode_may_name(model):
    with pytest.raises(ModeError, match="'use_running_average' is not an option of the modules set"):
        with_mode(model, {"use_running_average": True}, only=nnx.Dropout)


def test_a_model_built_for_decoding_takes_the_presets_without_cache_sizes(model):
    decoding = nnx.view(model, decode=False)
    decoding.attention.decode = True  # as built with decode=True, before init_cache
    assert with_mode(decoding, "eval").attention.decode is True


def test_cache_sizes_given_anew_make_a_new_cache_on_the_view(model):
    first = with_mode(model, {"decode": True, "batch_size": 2, "max_length": 5})
    second = with_mode(first, {"decode": True, "batch_size": 1, "max_length": 3})
    assert second.attention.cached_key.shape == (1, 3, 2, 4)
    assert first.attention.cached_key.shape == (2, 5, 2, 4)


def test_decode_with_cache_sizes_makes_a_cache_on_the_view_only(model):
    view = with_mode(model, {"decode": True, "batch_size": 2, "max_length": 5, "deterministic": True})
    assert view.attention.cached_key.shape == (2, 5, 2, 4)
    assert model.attention.cached_key is None
    out = view(jnp.ones((2, 1, 4)))
    assert out.shape == (2, 1, 8) and int(view.attention.cache_index[...]) == 1


def test_linen_modules_have_no_view_options():
    with pytest.raises(TypeError, match="Linen modules take their modes as call arguments"):
        view_options(nn.Dense(2))
