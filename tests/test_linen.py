"""capture() on a Linen module: apply() is recorded without changing the call."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import LinenNet

from jaxcapture_nb import capture


def test_apply_records_sowed_values_and_returns_what_it_would_have(linen_net):
    module, variables = linen_net
    x = jnp.ones((3, 4))
    expected = module.apply(variables, x)
    with capture(module) as cap:
        y = module.apply(variables, x)
        y2 = module.apply(variables, x)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(y2, expected)
    assert [(r.site, r.call_index, r.shape) for r in cap.records] == [
        ("hidden", 0, (3, 8)),
        ("hidden", 1, (3, 8)),
    ]
    assert cap.records[0].var_type == "intermediates"
    assert "apply" not in vars(module)


def test_methods_records_every_submodule_output(linen_net):
    module, variables = linen_net
    with capture(module, methods=True) as cap:
        module.apply(variables, jnp.ones((3, 4)))
    # Linen returns one collection per apply(), ordered by module, not by time.
    assert sorted(r.site for r in cap.records) == [
        "Dense_0.__call__",
        "Dense_1.__call__",
        "__call__",
        "hidden",
    ]


def test_stale_intermediates_from_init_are_stripped(linen_net):
    module, _ = linen_net
    variables = module.init(jax.random.key(0), jnp.ones((1, 4)))
    stale = dict(variables, intermediates={"hidden": (jnp.zeros((1, 8)),) * 3})
    with capture(module) as cap:
        module.apply(stale, jnp.ones((1, 4)))
    assert len(cap.records) == 1


def test_user_mutable_collections_are_returned_unchanged(linen_net):
    module, variables = linen_net
    x = jnp.ones((3, 4))
    with capture(module) as cap:
        y, state = module.apply(variables, x, mutable=["intermediates"])
    assert set(state) == {"intermediates"}
    assert state["intermediates"]["hidden"][0].shape == (3, 8)
    assert len(cap.records) == 1
    with capture(module):
        out = module.apply(variables, x, mutable=["params"])
    assert isinstance(out, tuple) and set(out[1]) == {"params"}


@pytest.mark.parametrize("keep", ["all", "summary"])
def test_jitted_apply_records_through_a_callback(linen_net, keep):
    module, variables = linen_net
    forward = jax.jit(lambda v, x: module.apply(v, x))
    with capture(module, keep=keep) as cap:
        for i in range(3):
            jax.block_until_ready(forward(variables, jnp.ones((3, 4)) * i))
    expected = 3 if keep == "all" else 1
    assert len(cap.records) == expected
    assert cap.records[-1].shape == (3, 8)
    assert int(np.asarray(cap.records[-1].summary.count)) == 24
    # Outside the block the compiled callback finds no capture and records nothing.
    forward(variables, jnp.ones((3, 4)))
    assert len(cap.records) == expected


def test_linen_state_is_shaped_like_flax_own(linen_net):
    module, variables = linen_net
    x = jnp.ones((3, 4))
    _, flax_state = module.apply(variables, x, mutable=["intermediates"])
    with capture(module) as cap:
        module.apply(variables, x)
    assert jax.tree.structure(cap.state) == jax.tree.structure(dict(flax_state))


def test_linen_module_cannot_take_variable_types(linen_net):
    from flax import nnx

    with pytest.raises(TypeError, match="intermediates"):
        capture(LinenNet(), nnx.Intermediate)
