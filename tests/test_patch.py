"""patch and the patching sweep: equal to patching the model's code by hand, eager and jitted, and harmless."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from public_style import GqaDecoder

from jaxcapture_nb import (
    at,
    attribution_patching,
    capture,
    mean_ablation,
    patch,
    patching_sweep,
    resample_ablation,
    steering,
    zero_ablation,
)


class PerturbingBlock(nnx.Module):
    """A residual MLP block that passes its residual stream through ``perturb``."""

    def __init__(self, width: int, rngs: nnx.Rngs):
        self.up = nnx.Linear(width, 2 * width, rngs=rngs)
        self.down = nnx.Linear(2 * width, width, rngs=rngs)

    def __call__(self, x):
        return self.perturb("residual", x + self.down(nnx.gelu(self.up(x))))


class PerturbingStack(nnx.Module):
    def __init__(self, width: int = 8, depth: int = 3, seed: int = 0):
        rngs = nnx.Rngs(seed)
        self.blocks = nnx.List([PerturbingBlock(width, rngs) for _ in range(depth)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def decoder():
    return GqaDecoder(
        vocab=32, width=32, hidden=64, layers=3, heads=4, kv_heads=2, head_dim=8, rngs=nnx.Rngs(0)
    )


def decoder_by_hand(model, tokens, *, layer, replace):
    """GqaDecoder.__call__ with layer ``layer``'s output replaced by ``replace(output)``."""
    positions = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
    x = model.embed(tokens)
    for i, block in enumerate(model.layers):
        x = block(x, positions)
        if i == layer:
            x = replace(x)
    return model.embed.attend(model.norm(x))


TOKENS = jax.random.randint(jax.random.key(1), (2, 6), 0, 32)
OTHER = jax.random.randint(jax.random.key(2), (2, 6), 0, 32)


def state_of(model):
    graphdef, state = nnx.split(model)
    return graphdef, jax.tree.map(np.asarray, state)


def assert_same_model(before, model):
    graphdef, state = state_of(model)
    assert graphdef == before[0]
    jax.tree.map(np.testing.assert_array_equal, state, before[1])


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "nnx.jit"])
def test_a_patched_method_output_equals_the_model_patched_by_hand(jitted):
    model = decoder()
    run = nnx.jit(lambda m, t: m(t)) if jitted else (lambda m, t: m(t))
    with capture(model, keep="last", methods=True) as clean:
        run(model, OTHER)
    cases = [
        ("layers.1.__call__", zero_ablation(), lambda x: jnp.zeros_like(x)),
        (at("layers.0.__call__", np.s_[:, 3]), clean["layers.0.__call__"], None),
        ("layers.2.__call__", steering(jnp.ones(32), 0.5), lambda x: x + 0.5),
        ("layers.1.__call__", lambda v: v * 2, lambda x: x * 2),
    ]
    for site, replacement, by_hand in cases:
        if by_hand is None:  # token 3 from the other input
            other = clean["layers.0.__call__"]
            by_hand = lambda x, other=other: x.at[:, 3].set(other[:, 3])  # noqa: E731
        name = site if isinstance(site, str) else site.site
        layer = int(name.split(".")[1])
        before = state_of(model)
        with patch(model, {site: replacement}):
            got = run(model, TOKENS)
        assert_same_model(before, model)
        by_hand_run = functools.partial(decoder_by_hand, model, layer=layer, replace=by_hand)
        want = (jax.jit(by_hand_run) if jitted else by_hand_run)(TOKENS)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_jitted_step_is_traced_once_per_set_of_patched_sites_not_per_value():
    model = PerturbingStack()
    x = jax.random.normal(jax.random.key(0), (2, 5, 8))
    traces = []
    step = nnx.jit(lambda m, x: (traces.append(1), m(x))[1])
    step(model, x)  # Flax's perturb outside a capture gives the model its Perturbation Variables
    plain = step(model, x)
    traces.clear()
    for scale in (1.0, 2.0, 3.0):
        with patch(model, {at("blocks.2.residual", np.s_[:, 1]): steering(jnp.ones(8), scale)}):
            y = step(model, x)
        np.testing.assert_allclose(y[:, 1] - plain[:, 1], scale, rtol=1e-5)
        np.testing.assert_array_equal(y[:, 0], plain[:, 0])
    with patch(model, {"blocks.0.residual": zero_ablation()}):
        step(model, x)
    assert len(traces) == 2  # steered (three values), ablated
    np.testing.assert_array_equal(step(model, x), plain)  # the plain trace again
    assert len(traces) == 2


def test_ablations_replace_with_zeros_a_mean_or_other_inputs_values():
    model = PerturbingStack()
    x = jax.random.normal(jax.random.key(0), (4, 5, 8))
    with capture(model, nnx.Perturbation, keep="last", grads=True) as seen:
        with patch(model, {"blocks.0.residual": mean_ablation()}):
            jax.grad(lambda x: model(x).sum())(x)
    values = {r.site: r.value for r in seen.records if r.var_type is nnx.Perturbation}
    mean = values["blocks.0.residual"]
    # A capture sees the patched value: each example's is the batch's mean.
    np.testing.assert_allclose(mean, jnp.broadcast_to(mean[:1], mean.shape))
    reference = jax.random.normal(jax.random.key(3), (4, 5, 8))
    shuffled = resample_ablation(reference, seed=0).operands[0]
    with capture(model, nnx.Perturbation, keep="last", grads=True) as seen:
        with patch(model, {"blocks.1.residual": resample_ablation(reference, seed=0)}):
            jax.grad(lambda x: model(x).sum())(x)
    values = {r.site: r.value for r in seen.records if r.var_type is nnx.Perturbation}
    np.testing.assert_array_equal(values["blocks.1.residual"], shuffled)
    assert sorted(np.asarray(shuffled)[:, 0, 0].tolist()) == sorted(np.asarray(reference)[:, 0, 0].tolist())


def test_a_capture_inside_a_patch_records_the_patched_output():
    model = decoder()
    with patch(model, {"layers.0.mlp.__call__": zero_ablation()}):
        with capture(model, keep="last", methods=True) as cap:
            model(TOKENS)
    assert float(jnp.abs(cap["layers.0.mlp.__call__"]).max()) == 0.0
    assert float(jnp.abs(cap["layers.0.attention.__call__"]).max()) > 0.0


def test_the_model_is_left_as_it_was_when_the_block_raises():
    model = decoder()
    before = state_of(model)
    with pytest.raises(ZeroDivisionError), patch(model, {"layers.0.__call__": zero_ablation()}):
        model(TOKENS)
        raise ZeroDivisionError("a cell that fails after the forward pass")
    assert_same_model(before, model)
    np.testing.assert_array_equal(model(TOKENS), decoder()(TOKENS))


def test_an_unknown_site_names_the_nearest_ones():
    model = decoder()
    with (
        pytest.raises(KeyError, match=r"layers\.1\.mlp\.__call__"),
        patch(model, {"layers.1.mpl.__call__": 0.0}),
    ):
        model(TOKENS)
    with pytest.raises(KeyError, match=r"has no site 'layer\.1\.__call__'.*nearest: layers\.1\.__call__"):
        with patch(model, {"layer.1.__call__": 0.0}):
            model(TOKENS)
    stack = PerturbingStack()
    with pytest.raises(KeyError, match=r"blocks\.1\.residual"), patch(stack, {"blocks.1.residul": 0.0}):
        stack(jnp.ones((1, 8)))
    with pytest.raises(TypeError, match="at\\('blocks.0.out'"):
        patch(stack, {3: 0.0})


def test_patch_with_no_patches_leaves_a_compiled_step_alone():
    model = decoder()
    traces = []
    step = nnx.jit(lambda m, t: (traces.append(1), m(t))[1])
    plain = step(model, TOKENS)
    with patch(model, {}):
        np.testing.assert_array_equal(step(model, TOKENS), plain)
    assert len(traces) == 1


def logit_difference(logits):
    return jnp.mean(logits[:, -1, 3] - logits[:, -1, 5])


def test_the_sweep_equals_patching_one_site_and_position_at_a_time():
    model = decoder()
    sites = [f"layers.{i}.__call__" for i in range(3)]
    positions = list(range(6))
    result = patching_sweep(model, TOKENS, OTHER, logit_difference, sites, positions, chunk=8)
    with capture(model, keep="last", methods=True) as clean:
        model(TOKENS)
    step = nnx.jit(lambda m, t: m(t))
    for i, site in enumerate(sites):
        for p in positions:
            with patch(model, {at(site, np.s_[:, p]): clean[site]}):
                want = float(logit_difference(step(model, OTHER)))
            assert result.effect[i, p] == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert result.clean == pytest.approx(float(logit_difference(model(TOKENS))), abs=1e-6)
    assert result.corrupted == pytest.approx(float(logit_difference(model(OTHER))), abs=1e-6)
    # The last layer's output at the last position decides the last position's logits.
    assert result.recovery[2, 5] == pytest.approx(1.0, abs=1e-5)
    assert "recovery" in result.table() and "layers.2.__call__" in result.table()


def test_attribution_estimates_no_change_where_the_inputs_agree_and_the_exact_change_for_a_linear_metric():
    model = PerturbingStack(depth=2)
    clean = jax.random.normal(jax.random.key(0), (2, 4, 8))
    corrupted = clean.at[:, 2].add(1.0)  # positions 0, 1 and 3 agree

    def metric(out):
        return jnp.sum(out[:, 2])

    sites = ["blocks.0.residual", "blocks.1.residual"]
    estimate = attribution_patching(model, clean, corrupted, metric, sites, positions=range(4))
    np.testing.assert_allclose(estimate.effect[:, [0, 1, 3]], estimate.corrupted, atol=1e-5)
    exact = patching_sweep(model, clean, corrupted, metric, sites, positions=range(4))
    # Patching the last block's output is linear in it: the estimate is exact there.
    np.testing.assert_allclose(estimate.effect[1], exact.effect[1], rtol=1e-4, atol=1e-4)


class RematStack(PerturbingStack):
    """PerturbingStack with each block under ``nnx.remat``."""

    def __call__(self, x):
        for block in self.blocks:
            x = nnx.remat(lambda block, x: block(x))(block, x)
        return x


class ScannedStack(nnx.Module):
    """Three PerturbingBlocks stacked by ``nnx.vmap`` and run by ``nnx.scan``."""

    def __init__(self, width: int = 8):
        @nnx.vmap(in_axes=0, out_axes=0)
        def make(key):
            return PerturbingBlock(width, nnx.Rngs(key))

        self.blocks = make(jax.random.split(jax.random.key(0), 3))

    def __call__(self, x):
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def body(block, x):
            return block(x)

        return body(self.blocks, x)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "nnx.jit"])
def test_patches_reach_remat_and_scanned_stacks(jitted):
    x = jax.random.normal(jax.random.key(0), (2, 3, 8))
    run = nnx.jit(lambda m, x: m(x)) if jitted else (lambda m, x: m(x))
    remat = RematStack()
    with patch(remat, {"blocks.1.residual": zero_ablation()}):
        got = run(remat, x)
    np.testing.assert_allclose(got, remat.blocks[2](jnp.zeros_like(x)), rtol=1e-6, atol=1e-6)
    stack = ScannedStack()
    plain = run(stack, x)
    # In a stacked module a replacement's arrays are split along the stack
    # like its other Variables: one per layer. Steer the last layer only.
    with patch(stack, {"blocks.residual": steering(jnp.ones((3, 8)), jnp.array([0.0, 0.0, 2.0]))}):
        steered = run(stack, x)
    np.testing.assert_allclose(steered - plain, 2.0, rtol=1e-5)
    with patch(stack, {"blocks.residual": zero_ablation()}):
        np.testing.assert_array_equal(run(stack, x), 0.0)
