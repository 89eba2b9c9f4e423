"""patch and the patching sweep: equal to patching the model's code by hand, eager and jitted, and harmless."""

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen, nnx
from public_style import GqaDecoder
from tolerances import assert_float32_close
from transformer import Config, Transformer

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


def _host(x):
    return np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)


def state_of(model):
    graphdef, state = nnx.split(model)
    return graphdef, jax.tree.map(_host, state)


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
        assert_float32_close(got, want)


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
            assert_float32_close(result.effect[i, p], want)
    # The sweep's runs are compiled, the references eager: float32 sums in another order.
    assert_float32_close(result.clean, logit_difference(model(TOKENS)))
    assert_float32_close(result.corrupted, logit_difference(model(OTHER)))
    # The last layer's output at the last position decides the last position's logits.
    assert result.recovery[2, 5] == pytest.approx(1.0, abs=1e-5)
    assert "recovery" in result.table() and "layers.2.__call__" in result.table()


def test_a_head_level_sweep_equals_patching_one_head_and_position_at_a_time():
    model = decoder()  # 4 heads; the queries are [batch, tokens, heads, head_dim]
    sites = [f"layers.{i}.attention.q_norm.__call__" for i in (2, 0)]
    positions = [1, 5]
    result = patching_sweep(model, TOKENS, OTHER, logit_difference, sites, positions, heads=4, chunk=8)
    in_model_order = sites[::-1]
    assert result.sites == [f"{site}[head {h}]" for site in in_model_order for h in range(4)]
    assert result.effect.shape == (8, 2)
    with capture(model, keep="last", methods=True) as clean:
        model(TOKENS)
    step = nnx.jit(lambda m, t: m(t))
    for row in range(len(result.sites)):
        site, head = in_model_order[row // 4], row % 4
        for column, p in enumerate(positions):
            with patch(model, {at(site, np.s_[:, p, head]): clean[site]}):
                want = float(logit_difference(step(model, OTHER)))
            assert_float32_close(result.effect[row, column], want)
    some = patching_sweep(model, TOKENS, OTHER, logit_difference, sites, positions, heads=[3, 1])
    assert some.sites == [f"{site}[head {h}]" for site in in_model_order for h in (3, 1)]
    assert_float32_close(some.effect, result.effect[[3, 1, 7, 5]])
    with pytest.raises(ValueError, match=r"names head 4 of 'layers.2.attention.q_norm.__call__'"):
        patching_sweep(model, TOKENS, OTHER, logit_difference, sites, positions, heads=5)
    from_end = patching_sweep(
        model, TOKENS, OTHER, logit_difference, sites, positions, heads=[3], head_axis=-2
    )
    assert_float32_close(from_end.effect, result.effect[[3, 7]])


def test_attribution_by_head_splits_the_estimate_of_the_whole_site():
    model = decoder()
    site = "layers.1.attention.q_norm.__call__"
    whole = attribution_patching(model, TOKENS, OTHER, logit_difference, site, positions=range(6))
    by_head = attribution_patching(model, TOKENS, OTHER, logit_difference, site, positions=range(6), heads=4)
    assert by_head.sites == [f"{site}[head {h}]" for h in range(4)]
    # The first-order estimate is linear: a site's change is its heads' changes summed.
    changes = by_head.effect - by_head.corrupted
    assert_float32_close(changes.sum(axis=0), whole.effect[0] - whole.corrupted)
    with pytest.raises(ValueError, match="head_axis and position_axis are both 1"):
        attribution_patching(
            model, TOKENS, OTHER, logit_difference, site, positions=[0], heads=2, head_axis=1
        )
    with pytest.raises(ValueError, match=f"names head 4 of '{site}'"):
        attribution_patching(model, TOKENS, OTHER, logit_difference, site, positions=[0], heads=5)
    # A head axis counted from the end is the same axis.
    from_end = attribution_patching(
        model, TOKENS, OTHER, logit_difference, site, range(6), heads=4, head_axis=-2
    )
    assert_float32_close(from_end.effect, by_head.effect)


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


@dataclasses.dataclass
class StackConfig:
    """A plain (unfrozen) dataclass, which cannot be hashed: many models keep their config so."""

    width: int = 8
    depth: int = 2


class ConfiguredStack(PerturbingStack):
    def __init__(self):
        super().__init__(width=8, depth=2)
        self.config = StackConfig()


def test_sweeps_take_a_model_with_a_plain_config_and_one_site_by_name_and_warn_of_nothing():
    model = ConfiguredStack()
    clean = jax.random.normal(jax.random.key(0), (2, 4, 8))
    corrupted = clean.at[:, 2].add(1.0)

    def metric(out):
        return jnp.sum(out[:, 2])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # Flax's perturb notices too, which the test settings hide
        swept = patching_sweep(model, clean, corrupted, metric, "blocks.1.residual", positions=range(4))
        estimated = attribution_patching(
            model, clean, corrupted, metric, "blocks.1.residual", positions=range(4), labels="wxyz"
        )
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
    assert swept.sites == estimated.sites == ["blocks.1.residual"]
    assert (swept.position_labels, estimated.position_labels) == ([], list("wxyz"))
    unconfigured = PerturbingStack(width=8, depth=2)
    want = patching_sweep(unconfigured, clean, corrupted, metric, ["blocks.1.residual"], positions=range(4))
    np.testing.assert_array_equal(swept.effect, want.effect)
    # Patching the last block's output is linear in it: the estimate is exact there.
    np.testing.assert_allclose(estimated.effect, swept.effect, rtol=1e-4, atol=1e-4)


class DottedBlock(nnx.Module):
    """Passes its scores through ``perturb`` under a name with a dot, as attention code names them."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        return self.perturb("attn.scores", self.linear(x)).sum()


def test_a_perturb_name_with_a_dot_is_patched_and_a_wrong_shape_names_its_site():
    model = DottedBlock(nnx.Rngs(0))
    x = jnp.ones((2, 4))
    with patch(model, {"attn.scores": lambda scores: 2 * scores}):
        assert float(model(x)) == pytest.approx(2 * float(model.linear(x).sum()))
    with pytest.raises(
        ValueError,
        match=r"'attn.scores': a replacement of shape \(3,\) cannot stand for its value of shape \(2, 4\)",
    ):
        with patch(model, {"attn.scores": jnp.ones(3)}):
            model(x)
    with pytest.raises(KeyError, match="never reached the patched site 'attn.score'"):
        with patch(model, {"attn.score": 0.0}):
            model(x)


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
    assert_float32_close(got, remat.blocks[2](jnp.zeros_like(x)))
    stack = ScannedStack()
    plain = run(stack, x)
    # In a stacked module a replacement's arrays are split along the stack
    # like its other Variables: one per layer. Steer the last layer only.
    with patch(stack, {"blocks.residual": steering(jnp.ones((3, 8)), jnp.array([0.0, 0.0, 2.0]))}):
        steered = run(stack, x)
    np.testing.assert_allclose(steered - plain, 2.0, rtol=1e-5)
    with patch(stack, {"blocks.residual": zero_ablation()}):
        np.testing.assert_array_equal(run(stack, x), 0.0)


def _forward(model, x):
    return model(x)


def _graph_jit(model, x):
    return nnx.jit(_forward)(model, x)


def _tree_jit(model, x):
    return nnx.jit(_forward, graph=False)(model, x)


def _graph_updates_off(model, x):
    return nnx.jit(_forward, graph_updates=False)(model, x)


def _tree_mode(model, x):
    with nnx.set_graph_mode(False):
        return nnx.jit(_forward)(model, x)


def _cached_partial(model, x):
    return nnx.cached_partial(nnx.jit(_forward), model)(x)


def _split_and_jax_jit(model, x):
    graphdef, state = nnx.split(model)
    return jax.jit(lambda state, x: nnx.merge(graphdef, state)(x))(state, x)


def _scanned_steps(model, x):
    def body(model, x):
        return model, model(x)

    scan = nnx.scan(body, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
    return nnx.jit(lambda model, xs: scan(model, xs)[1])(model, jnp.stack([x, x]))[0]


def _made_before(style):
    """The style's step, made before the block and called inside it."""

    def make(model):
        if style == "cached_partial":
            step = nnx.cached_partial(nnx.jit(_forward), model)
            return lambda model, x: step(x)
        if style == "cached_partial, donated":
            step = nnx.cached_partial(nnx.jit(_forward, donate_argnums=0), model)
            return lambda model, x: step(x)
        if style == "nnx.view":
            view = nnx.view(model)
            return lambda model, x: view(x)
        graphdef, state = nnx.split(model)
        step = jax.jit(lambda state, x: nnx.merge(graphdef, state)(x))
        return lambda model, x: step(state, x)

    return make


LOOP_STYLES = {
    "eager": _forward,
    "nnx.jit": _graph_jit,
    "nnx.jit(graph=False)": _tree_jit,
    "nnx.jit(graph_updates=False)": _graph_updates_off,
    "nnx.set_graph_mode(False)": _tree_mode,
    "cached_partial made inside": _cached_partial,
    "split + jax.jit inside": _split_and_jax_jit,
    "nnx.scan over steps": _scanned_steps,
}
MADE_BEFORE = ["cached_partial", "cached_partial, donated", "nnx.view", "split + jax.jit"]


class MlpBlock(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.mlp = nnx.Linear(8, 8, rngs=rngs)

    def __call__(self, x):
        return x + nnx.gelu(self.mlp(x))


class MlpStack(nnx.Module):
    """Residual MLP blocks whose outputs are the patched sites (no perturb: Flax 0.12.8 stores one called outside a capture)."""

    def __init__(self):
        rngs = nnx.Rngs(0)
        self.blocks = nnx.List([MlpBlock(rngs) for _ in range(3)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _ablated_first_block(x):
    """The stack's output with block 0's output zeroed, written by hand."""
    twin = MlpStack()
    x = jnp.zeros_like(x)
    for block in twin.blocks[1:]:
        x = block(x)
    return x


@pytest.mark.parametrize("style", LOOP_STYLES)
def test_every_loop_style_made_inside_the_block_is_patched(style):
    model = MlpStack()
    before = state_of(model)
    x = jax.random.normal(jax.random.key(0), (2, 8))
    with patch(model, {"blocks.0.__call__": zero_ablation()}):
        out = LOOP_STYLES[style](model, x)
    assert_float32_close(out, _ablated_first_block(x))
    assert_same_model(before, model)


@pytest.mark.parametrize("style", MADE_BEFORE)
def test_a_copy_made_before_the_block_is_refused_before_it_runs_and_the_model_kept(style):
    model = MlpStack()
    before = state_of(model)
    x = jax.random.normal(jax.random.key(0), (2, 8))
    step = _made_before(style)(model)
    with pytest.raises(
        RuntimeError, match=r"runs a copy of its module made before the `with patch\(\.\.\.\)`"
    ):
        with patch(model, {"blocks.0.__call__": zero_ablation()}):
            step(model, x)
    assert_same_model(before, model)  # no array donated, nothing left behind
    assert_float32_close(step(model, x), MlpStack()(x))  # the step works as before


def test_a_step_compiled_before_the_block_is_named_when_the_block_ends():
    model = MlpStack()
    x = jax.random.normal(jax.random.key(0), (2, 8))
    step = nnx.cached_partial(nnx.jit(_forward), model)
    step(x)  # compiled without the patch: the block's call runs no Python of the model
    with pytest.raises(KeyError, match="a step compiled before the block") as raised:
        with patch(model, {"blocks.0.__call__": zero_ablation()}):
            step(x)
    assert "nearest" not in str(raised.value)  # the site exists; only the step missed it


def test_a_step_compiled_before_the_block_is_named_also_after_the_same_patch_reached_the_site():
    model = MlpStack()
    x = jax.random.normal(jax.random.key(0), (2, 8))
    ablate = {"blocks.0.__call__": zero_ablation()}
    traces = []
    other = nnx.jit(lambda model, x: (traces.append(1), model(x))[1])
    with patch(model, ablate):  # the same patch, reached by another compiled step
        ablated = other(model, x)
    step = nnx.cached_partial(nnx.jit(_forward), model)
    plain = step(x)  # compiled without the patch
    with pytest.raises(KeyError, match="a step compiled before the block"):
        with patch(model, ablate):
            step(x)
    with patch(model, ablate):  # the step compiled in the first block reaches it without a trace
        np.testing.assert_array_equal(other(model, x), ablated)
    assert len(traces) == 1
    np.testing.assert_array_equal(step(x), plain)


class LinenBlock(linen.Module):
    """A residual block whose call returns the new stream and the one it was given."""

    @linen.compact
    def __call__(self, x):
        return x + linen.gelu(linen.Dense(8)(x)), x


class LinenStack(linen.Module):
    @linen.compact
    def __call__(self, x):
        for _ in range(3):
            x, _ = LinenBlock()(x)
        return linen.Dense(4)(x)


def _linen_stack():
    module = LinenStack()
    x = jax.random.normal(jax.random.key(3), (2, 5, 8))
    return module, module.init(jax.random.key(0), x), x


def _linen_by_hand(variables, x, *, layer, replace):
    """LinenStack's call with block ``layer``'s output replaced by ``replace(output)``."""
    params = variables["params"]
    for i in range(3):
        x, _ = LinenBlock().apply({"params": params[f"LinenBlock_{i}"]}, x)
        if i == layer:
            x = replace(x)
    return linen.Dense(4).apply({"params": params["Dense_0"]}, x)


def test_a_linen_method_output_equals_the_module_patched_by_hand():
    module, variables, x = _linen_stack()
    steer = jnp.linspace(-1.0, 1.0, 8)
    with patch(module, {"LinenBlock_1.__call__[0]": steering(steer, scale=2.0)}):
        steered = module.apply(variables, x)
    assert_float32_close(
        steered, _linen_by_hand(variables, x, layer=1, replace=lambda v: v + 2.0 * steer[None, None])
    )
    with patch(module, {at("LinenBlock_0.__call__[0]", np.s_[:, 2]): zero_ablation()}):
        ablated = module.apply(variables, x)
    assert_float32_close(
        ablated, _linen_by_hand(variables, x, layer=0, replace=lambda v: v.at[:, 2].set(0.0))
    )
    # After the block, apply is the module's own again.
    np.testing.assert_array_equal(
        module.apply(variables, x), _linen_by_hand(variables, x, layer=-1, replace=None)
    )
    assert "apply" not in vars(module)


def test_a_capture_inside_a_linen_patch_records_the_patched_output():
    module, variables, x = _linen_stack()
    with patch(module, {"LinenBlock_2.__call__[0]": zero_ablation()}):
        with capture(module, methods=True) as cap:
            module.apply(variables, x)
    recorded = {r.site: r for r in cap.records}
    patched = recorded["LinenBlock_2.__call__[0]"].summary
    assert patched.max == 0.0 and patched.min == 0.0
    assert recorded["LinenBlock_1.__call__[0]"].summary.max != 0.0
    # Every method site that capture names, patch can name.
    for site in recorded:
        with patch(module, {site: lambda v: v}):
            module.apply(variables, x)


def test_a_linen_patch_names_a_site_the_block_never_reached_and_refuses_jax_jit():
    module, variables, x = _linen_stack()
    with pytest.raises(KeyError, match=r"'LinenBlock_9.__call__' \(nearest: LinenBlock_[0-2].__call__"):
        with patch(module, {"LinenBlock_9.__call__": zero_ablation()}):
            module.apply(variables, x)
    with pytest.raises(KeyError, match="it never called LinenStack.apply"):
        with patch(module, {"LinenBlock_0.__call__": zero_ablation()}):
            pass
    step = jax.jit(module.apply)
    with pytest.raises(RuntimeError, match=r"must enter as variables.*step\(p.variables\(variables\), x\)"):
        with patch(module, {"LinenBlock_0.__call__[0]": zero_ablation()}):
            step(variables, x)
    # Nothing was compiled with the patch in it.
    assert_float32_close(step(variables, x), module.apply(variables, x))
    # Another module's apply passes untouched, although its method has the site's name.
    block = {"params": variables["params"]["LinenBlock_0"]}
    with pytest.raises(KeyError, match="never called LinenStack.apply"):
        with patch(module, {"__call__[0]": zero_ablation()}):
            out, _ = LinenBlock().apply(block, x)
    np.testing.assert_array_equal(out, LinenBlock().apply(block, x)[0])


def test_sweeps_name_what_they_take():
    module, variables, x = _linen_stack()
    for sweep in (patching_sweep, attribution_patching):
        with pytest.raises(TypeError, match="sweeps take a flax.nnx.Module, got LinenStack"):
            sweep(module, x, x, jnp.sum, ["LinenBlock_0.__call__[0]"])


def _own_transformer(perturb=False):
    config = Config(dropout=0.0, sow_intermediates=False, perturb_activations=perturb)
    return Transformer(config, rngs=nnx.Rngs(0))


def _own_transformer_by_hand(model, tokens, *, layer, replace_block=None, replace_attn=None):
    """Transformer.__call__ (no cache, no dropout), block ``layer``'s output or its attention output replaced."""
    positions = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
    x = model.embed(tokens) * jnp.sqrt(jnp.float32(model.config.width))
    for i, block in enumerate(model.blocks):
        _, h = block.attn(block.attention_norm(x), positions, None)
        if i == layer and replace_attn is not None:
            h = replace_attn(h)
        x = x + h
        x = x + block.mlp(block.mlp_norm(x))
        if i == layer and replace_block is not None:
            x = replace_block(x)
    return model.embed.attend(model.final_norm(x))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "nnx.jit"])
def test_the_projects_transformer_patched_equals_its_code_patched_by_hand(jitted):
    tokens = jax.random.randint(jax.random.key(4), (2, 7), 0, Config().vocab)
    run = nnx.jit(lambda m, t: m(t)[0]) if jitted else (lambda m, t: m(t)[0])
    model = _own_transformer()
    before = state_of(model)
    # A block returns (cache, x): the site is the leaf [1] of its output.
    with patch(model, {at("blocks.1.__call__[1]", np.s_[:, 2:4]): zero_ablation()}):
        got = run(model, tokens)
    assert_same_model(before, model)
    want = _own_transformer_by_hand(model, tokens, layer=1, replace_block=lambda x: x.at[:, 2:4].set(0.0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    # A perturb site: the attention output of block 0 (the other perturbs left as they are).
    perturbing = _own_transformer(perturb=True)
    identity = {f"blocks.{i}.{name}": (lambda v: v) for i in range(2) for name in ("attn_out", "mlp.hidden")}
    with patch(perturbing, {**identity, "blocks.0.attn_out": steering(jnp.ones(16), 3.0)}):
        got = run(perturbing, tokens)
    want = _own_transformer_by_hand(model, tokens, layer=0, replace_attn=lambda h: h + 3.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("operand", [jnp.ones(8), 2.0], ids=["a vector for every layer", "a scalar"])
def test_an_array_without_the_stacks_axis_is_explained(operand):
    stack = ScannedStack()
    x = jax.random.normal(jax.random.key(0), (2, 3, 8))
    before = state_of(stack)
    with pytest.raises((ValueError, IndexError)) as raised:
        with patch(stack, {"blocks.residual": operand}):
            stack(x)
    assert "give one per layer (a leading axis of the stack's length" in "\n".join(raised.value.__notes__)
    assert_same_model(before, stack)


def test_a_jitted_linen_apply_takes_the_patch_as_variables_traced_once_per_set_of_sites():
    module, variables, x = _linen_stack()
    traces = []
    step = jax.jit(lambda v, x: (traces.append(1), module.apply(v, x))[1])
    plain = step(variables, x)
    for scale in (1.0, 2.0, 3.0):
        steer = scale * jnp.ones(8)
        with patch(module, {"LinenBlock_1.__call__[0]": steering(steer)}) as p:
            got = step(p.variables(variables), x)
        want = _linen_by_hand(variables, x, layer=1, replace=lambda v, s=steer: v + s[None, None])
        np.testing.assert_allclose(got, want, atol=1e-5)
    with patch(module, {"LinenBlock_0.__call__[0]": zero_ablation()}) as p:
        got = step(p.variables(variables), x)
    assert_float32_close(got, _linen_by_hand(variables, x, layer=0, replace=jnp.zeros_like))
    assert len(traces) == 3  # plain, steered (three values), ablated
    np.testing.assert_array_equal(step(variables, x), plain)  # after the blocks: the plain program
    assert len(traces) == 3
