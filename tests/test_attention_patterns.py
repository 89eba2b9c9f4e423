"""attention_patterns from a capture of a causal decoder that sows its attention probabilities."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcapture_nb import AttentionPatterns, attention_patterns, capture
from jaxcapture_nb.interventions import attention
from jaxcapture_nb.views.attention_view import AttentionView, attention_png


class SelfAttention(nnx.Module):
    """Causal multi-head attention that sows its probabilities, ``[batch, heads, queries, keys]``."""

    def __init__(self, width: int, heads: int, rngs: nnx.Rngs):
        self.heads = heads
        self.qkv = nnx.Linear(width, 3 * width, rngs=rngs)
        self.out = nnx.Linear(width, width, rngs=rngs)

    def __call__(self, x):
        batch, time, width = x.shape
        q, k, v = jnp.split(self.qkv(x).reshape(batch, time, 3 * self.heads, -1), 3, axis=2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1])
        scores = jnp.where(jnp.tril(jnp.ones((time, time), bool)), scores, jnp.finfo(scores.dtype).min)
        probs = jax.nn.softmax(scores, axis=-1)
        self.sow(nnx.Intermediate, "attention", probs)
        return x + self.out(jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, time, width))


class Decoder(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.embed = nnx.Embed(10, 16, rngs=rngs)
        self.layers = nnx.List([SelfAttention(16, 4, rngs) for _ in range(3)])

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.embed.attend(x)


WORDS = ["<s>", "a", "b", "c", "a", "b"]
TOKENS = jnp.array([[0, 1, 2, 3, 1, 2], [0, 3, 3, 3, 2, 1]])


@pytest.fixture(scope="module")
def captured():
    model = Decoder(nnx.Rngs(0))
    with capture(model, keep="last") as cap:
        model(TOKENS)
    return cap


def test_the_attention_sites_of_a_capture_are_found_and_read_for_one_example(captured):
    patterns = attention_patterns(captured, tokens=WORDS, example=1)
    assert patterns.sites == [f"layers.{i}.attention" for i in range(3)]
    assert patterns.weights.shape == (3, 4, 6, 6) and patterns.heads == 4
    np.testing.assert_array_equal(
        patterns.head("layers.2.attention", 3), np.asarray(captured["layers.2.attention"])[1, 3]
    )
    # Causal: no query looks ahead, and each query's weights sum to 1.
    assert np.all(np.triu(patterns.weights, k=1) == 0)
    np.testing.assert_allclose(patterns.weights.sum(-1), 1, rtol=1e-5)
    text = patterns.table()
    assert text.startswith("attention patterns: 3 layers x 4 heads over 6 tokens")
    assert "layers.0.attention, from the last token b: head 0 -> " in text


def test_sites_are_named_or_refused_with_what_to_do(captured):
    one = attention_patterns(captured, "layers.1.attention")
    assert one.sites == ["layers.1.attention"] and one.tokens == [str(p) for p in range(6)]
    with pytest.raises(KeyError, match="no site 'layers.9.attention'"):
        attention_patterns(captured, "layers.9.attention")
    with pytest.raises(ValueError, match=r"holds shape \(2, 6, 16\); attention weights are"):
        attention_patterns({"residual": np.zeros((2, 6, 16))}, "residual")
    with pytest.raises(ValueError, match="no captured value reads as attention probabilities"):
        attention_patterns({"residual": np.zeros((2, 6, 16))})
    with pytest.raises(ValueError, match="tokens has 2 labels for 6 positions"):
        attention_patterns(captured, tokens=["a", "b"])
    with pytest.raises(ValueError, match="3 queries and 4 keys: the patterns shown are self-attention"):
        attention_patterns(np.full((1, 2, 3, 4), 0.25))


def test_a_capture_of_summaries_and_too_many_weights_are_refused(captured, monkeypatch):
    model = Decoder(nnx.Rngs(0))
    with capture(model, keep="summary") as summaries:
        model(TOKENS)
    with pytest.raises(ValueError, match="kept only summaries: capture with keep='last'"):
        attention_patterns(summaries)
    monkeypatch.setattr(attention, "MAX_WEIGHTS", 100)
    with pytest.raises(ValueError, match="432 weights are too many to show"):
        attention_patterns(captured)


def test_a_notebook_shows_the_view_with_the_text_and_a_saved_picture(captured):
    patterns = attention_patterns(captured, tokens=WORDS)
    view = patterns.show()
    assert isinstance(view, AttentionView) and view.selected == [0, 0]
    assert np.frombuffer(view._weights, np.float32).reshape(3, 4, 6, 6).tolist() == patterns.weights.tolist()
    bundle, _ = patterns._repr_mimebundle_()
    assert bundle["text/plain"] == patterns.describe()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    picture = attention_png(patterns)
    assert picture.startswith('<img alt="attention patterns: 3 layers x 4 heads') and "base64," in picture


def test_one_array_of_weights_is_one_layer():
    weights = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    patterns = attention_patterns(weights)
    assert isinstance(patterns, AttentionPatterns) and patterns.sites == ["attention"]
