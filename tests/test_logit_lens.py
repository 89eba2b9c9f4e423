"""The logit lens against the model read by hand: each layer's residual stream through its final norm and tied unembedding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from public_style import GqaDecoder
from tolerances import assert_float32_close

from jaxcapture_nb import LogitLens, capture, find_readout, logit_lens
from jaxcapture_nb.interventions import lens

TOKENS = jax.random.randint(jax.random.key(1), (2, 6), 0, 32)
SITES = [f"layers.{i}.__call__" for i in range(3)]


@pytest.fixture(scope="module")
def decoder():
    return GqaDecoder(
        vocab=32, width=32, hidden=64, layers=3, heads=4, kv_heads=2, head_dim=8, rngs=nnx.Rngs(0)
    )


def by_hand(model, example=1):
    """Each layer's read-out probabilities, then the output's, ``[4, tokens, vocabulary]``, in NumPy."""
    with capture(model, keep="last", methods=True) as captured:
        logits = model(TOKENS)
    rows = [model.embed.attend(model.norm(captured[s]))[example] for s in SITES] + [logits[example]]
    return np.asarray(jax.nn.softmax(jnp.stack(rows), axis=-1), np.float64)


def test_each_site_is_read_through_the_models_final_norm_and_unembedding(decoder):
    want = by_hand(decoder)
    got = logit_lens(decoder, TOKENS, SITES[::-1], top=3, example=1, labels=list("abcdef"))
    assert got.sites == [*SITES, "output"]  # model order, then the model's own output
    # With no target, each position's is the token the model predicts there.
    np.testing.assert_array_equal(got.target, want[-1].argmax(-1))
    chosen = np.take_along_axis(want, got.target[None, :, None], axis=-1)[..., 0]
    assert_float32_close(got.probability, chosen)
    np.testing.assert_array_equal(got.rank[-1], 1)
    np.testing.assert_array_equal(got.rank, 1 + (want > chosen[..., None]).sum(-1))
    np.testing.assert_array_equal(got.top_tokens, np.argsort(-want, axis=-1, kind="stable")[..., :3])
    assert_float32_close(got.top_probabilities, -np.sort(-want, axis=-1)[..., :3])
    assert "logit lens" in got.table() and "layers.2.__call__" in got.table() and "5 f" in got.table()


def test_a_target_is_one_token_or_one_per_position(decoder):
    want = by_hand(decoder, example=0)
    one = logit_lens(decoder, TOKENS, SITES, target=7)
    np.testing.assert_array_equal(one.target, 7)
    assert_float32_close(one.probability, want[..., 7])
    per_position = jnp.arange(6) + 3
    each = logit_lens(decoder, TOKENS, SITES, target=per_position)
    assert_float32_close(each.probability, want[:, np.arange(6), np.arange(6) + 3])


def test_every_site_is_read_by_one_compiled_program(decoder):
    logit_lens(decoder, TOKENS, SITES, target=2, top=4)
    compiled = lens._lens_program._cache_size()
    for target in (3, 4, 5):  # new targets are arguments, not a new program
        logit_lens(decoder, TOKENS, SITES, target=target, top=4)
    assert lens._lens_program._cache_size() == compiled


class NoReadout(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(8, 4, rngs=rngs)
        self.block = nnx.Linear(4, 4, rngs=rngs)
        self.final_scale = nnx.LayerNorm(4, rngs=rngs)
        self.to_vocab = nnx.Linear(4, 8, rngs=rngs)

    def __call__(self, tokens):
        return self.to_vocab(self.final_scale(self.block(self.embed(tokens))))


def test_a_model_whose_readout_is_not_found_is_named_and_takes_one():
    model = NoReadout(nnx.Rngs(0))
    tokens = jnp.array([[1, 2, 3]])
    with pytest.raises(
        ValueError, match=r"found no final norm and unembedding on NoReadout.*give logit_lens a readout"
    ):
        logit_lens(model, tokens, "block.__call__")
    got = logit_lens(model, tokens, "block.__call__", readout=lambda m, h: m.to_vocab(m.final_scale(h)))
    # The last layer read through the readout is the output itself.
    assert_float32_close(got.probability[0], got.probability[1])
    with pytest.raises(TypeError, match="logit_lens takes a flax.nnx.Module"):
        logit_lens(object(), tokens, "block.__call__")


def test_find_readout_looks_one_level_down_and_prefers_an_lm_head():
    class Inner(nnx.Module):
        def __init__(self, rngs):
            self.embed_tokens = nnx.Embed(8, 4, rngs=rngs)
            self.norm = nnx.RMSNorm(4, rngs=rngs)

    class CausalLM(nnx.Module):
        def __init__(self, rngs):
            self.model = Inner(rngs)
            self.lm_head = nnx.Linear(4, 8, use_bias=False, rngs=rngs)

    lm = CausalLM(nnx.Rngs(0))
    hidden = jnp.ones((1, 2, 4))
    # lm_head sits beside model, not inside it: the norm is found below, the tied embedding used.
    assert_float32_close(find_readout(lm)(lm, hidden), lm.model.embed_tokens.attend(lm.model.norm(hidden)))


def test_the_csv_has_a_row_per_site_and_position_with_the_tokens_text():
    lens_result = LogitLens(
        ["layers.0.__call__", "output"],
        [1, 0],
        [[0.5, 0.25], [0.75, 1.0]],
        [[2, 3], [1, 1]],
        [[[0, 1], [1, 0]], [[1, 0], [0, 1]]],
        [[[0.5, 0.5], [0.5, 0.25]], [[0.75, 0.25], [1.0, 0.0]]],
        ["the", "cat"],
        lambda token: "AB"[token],
    )
    rows = lens_result.to_csv().splitlines()
    assert len(rows) == 1 + 2 * 2
    assert rows[1] == "layers.0.__call__,0,the,B,0.5,2,A B,0.5 0.5"
    with pytest.raises(ValueError, match="labels has 1 labels for 2 positions"):
        LogitLens(["output"], [1, 0], [[0.5, 0.5]], [[1, 1]], [[[1], [0]]], [[[0.5], [0.5]]], ["x"])
