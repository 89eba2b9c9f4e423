"""The logit lens over every layer against one forward pass of the same model.

The models are the Qwen3-style decoder of ``tests/public_style.py`` (tied
embeddings, a final RMSNorm) on 8 sequences of 32 tokens: the 4-layer one
of ``bench_patching.py`` (width 64, a vocabulary of 256), and 8 layers of
width 256 with a vocabulary of 32,768, where each layer's readout is a
large matrix product of its own. ``logit_lens`` reads every layer's output
(``layers.{i}.__call__``) of one example through the final norm and the
unembedding, in one compiled program with the forward pass; the baseline is
that forward pass alone, jitted. Both warm.

Target: the lens at most 1.5x the forward pass. Ratios are paired per round
(see ``_timing.paired_ratios``), with a 95% bootstrap interval.
"""

import argparse
import pathlib
import sys

import jax
import numpy as np
from _timing import paired_ratio_interval, paired_ratios, samples
from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from public_style import GqaDecoder  # noqa: E402

from jaxcapture_nb import logit_lens  # noqa: E402

BATCH, TOKENS = 8, 32
MODELS = {
    "4 layers, width 64, vocabulary 256": dict(vocab=256, width=64, hidden=128, layers=4),
    "8 layers, width 256, vocabulary 32768": dict(vocab=32768, width=256, hidden=768, layers=8),
}


def main(rounds: int) -> None:
    for name, shape in MODELS.items():
        model = GqaDecoder(**shape, rngs=nnx.Rngs(0))
        tokens = jax.random.randint(jax.random.key(1), (BATCH, TOKENS), 0, shape["vocab"])
        sites = [f"layers.{i}.__call__" for i in range(shape["layers"])]
        forward = nnx.jit(lambda m, t: m(t))

        def plain(model=model, tokens=tokens, forward=forward):
            return jax.block_until_ready(forward(model, tokens))

        def lens(model=model, tokens=tokens, sites=sites):
            return logit_lens(model, tokens, sites).probability

        times = samples({"forward": plain, "logit lens": lens}, rounds=rounds, warmup=2)
        ratio = paired_ratios(times, "forward")["logit lens"]
        low, high = paired_ratio_interval(times, "logit lens", "forward")
        print(
            f"{name}: forward {np.median(times['forward']) * 1e3:.2f} ms, logit lens over "
            f"{len(sites)} layers {np.median(times['logit lens']) * 1e3:.2f} ms; "
            f"{ratio:.2f}x [{low:.2f}, {high:.2f}]  target <= 1.5x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30)
    main(parser.parse_args().rounds)
