"""watch() on a realistic transformer: an unchanged nnx.jit adam step, watched and not.

The model is the decoder of ``tests/transformer.py`` (grouped-query
attention with rotary positions, a mixture of experts, RMSNorm, dropout),
sowing only what it computes anyway: the scaled embedding and the residual
stream after attention and after the experts, two sites per layer. The
baseline is the same model and step with its sows switched off by the
constructor flag: outside a capture Flax would store sowed values on the
module, which no training loop wants.

Targets, as medians over rounds of each round's own ratio to the baseline,
with 95% bootstrap intervals:
- watch(model), recording every step: at most 1.10x;
- watch(model, every=10): at most 1.02x;
- watch(model, log_dir=...), writing every recorded step to TensorBoard
  event files: at most 1.02x watch(model), in the same round;
- capture(model, keep="summary") around the step: at most 1.10x;
- the first two calls (trace and compile) under watch: at most 1.3x the
  baseline's first two calls.
watch(model, methods=True), which also streams the output of every method
call of every submodule (hundreds of sites), is reported beside them, with
the compile time and step time each site adds; then what one more summarized
value costs a compiled program, summarized on its own (as every sow once
was) and in the batch a watched step makes now. Every variant's traces are
counted: an unchanged step is traced once. ``--log-dir-only`` times only the
baseline, watch(model) and watch(model, log_dir=...), in a few minutes.
"""

import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from _timing import paired_ratio_interval, paired_ratios, samples_inside
from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from transformer import Config, Transformer, make_train_step  # noqa: E402

from jaxcapture_nb import capture, watch  # noqa: E402
from jaxcapture_nb.stats.summarize import packed_summary, step_rows

BASE = "without watch"
LOGGED = "watch(model, log_dir=...)"
# Where the logged variant writes; removed when the script ends.
LOG_DIR = pathlib.Path(tempfile.mkdtemp(prefix="bench_watch_model-"))


def config(layers: int, sow: bool) -> Config:
    return Config(
        vocab=256,
        width=128,
        hidden=256,
        num_layers=layers,
        num_heads=4,
        num_kv_heads=2,
        num_experts=4,
        top_k=2,
        dropout=0.1,
        sow_intermediates=sow,
        sow_activations_only=True,
    )


def setup(layers: int, sow: bool):
    model = Transformer(config(layers, sow), rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-4), wrt=nnx.Param)


# Each variant: whether its model sows, and the block it runs in (None: none).
VARIANTS = {
    BASE: (False, None),
    "without watch, again": (False, None),
    "watch(model)": (True, lambda m: watch(m, display=False)),
    LOGGED: (True, lambda m: watch(m, display=False, log_dir=LOG_DIR)),
    "watch(model, every=10)": (True, lambda m: watch(m, every=10, display=False)),
    'capture(keep="summary")': (True, lambda m: capture(m, keep="summary")),
    "watch(model, methods=True)": (True, lambda m: watch(m, methods=True, display=False)),
}


def step_times(layers: int, batch: int, length: int, calls: int, rounds: int, names: list[str]):
    """Seconds per round of each variant named, their traces, and the sites each records."""
    tokens = jax.random.randint(jax.random.key(1), (batch, length + 1), 0, 256)
    runs, blocks, traces = {}, {}, {}
    for name in names:
        sow, block = VARIANTS[name]
        model, optimizer = setup(layers, sow)
        traces[name] = []
        step = make_train_step(traces[name])
        if block is not None:
            blocks[name] = block(model).__enter__()

        def run(model=model, optimizer=optimizer, step=step, name=name):
            for _ in range(calls):
                loss = step(model, optimizer, tokens)
            # A watched run ends by recording what it sent, and a logged one
            # by writing it, so its host work is timed in its own turn, not
            # in the next variant's.
            if hasattr(blocks.get(name), "stream"):
                jax.block_until_ready(loss)
                blocks[name].stream.settle()
                if blocks[name]._log is not None:
                    blocks[name]._log.flush()
            return loss

        runs[name] = run
    times = samples_inside(runs, blocks, rounds=rounds)
    sites = {name: len(b.stream.series) for name, b in blocks.items() if hasattr(b, "stream")}
    sites |= {name: len(b.records) for name, b in blocks.items() if hasattr(b, "records")}
    return times, {name: len(t) for name, t in traces.items()}, sites


def first_two_calls(layers: int, batch: int, length: int, rounds: int) -> dict[str, list[float]]:
    """Seconds of the first two calls of a new step (trace, compile, run), per variant."""
    tokens = jax.random.randint(jax.random.key(1), (batch, length + 1), 0, 256)
    measured = {BASE: [], "watch(model)": [], "watch(model, methods=True)": []}
    order = list(measured)
    for i in range(rounds):
        for name in order[i % len(order) :] + order[: i % len(order)]:
            sow, block = VARIANTS[name]
            model, optimizer = setup(layers, sow)
            step = make_train_step([])
            context = block(model) if block else None
            if context is not None:
                context.__enter__()
            start = time.perf_counter()
            for _ in range(2):
                jax.block_until_ready(step(model, optimizer, tokens))
            measured[name].append(time.perf_counter() - start)
            if context is not None:
                context.__exit__(None, None, None)
    return measured


def per_site_costs(sites: int, shape: tuple[int, ...], runs: int = 21) -> dict[str, tuple[float, float]]:
    """Compile seconds and run seconds that summarizing ``sites`` values of one shape adds to a program.

    "one program per site" summarizes each value on its own, as a step did
    when every sow summarized its value where it ran; "one batch" is what a
    watched step does now (``step_rows``). Both are measured against the
    same program without summaries.
    """

    def program(summaries):
        def run(x):
            values = [jnp.tanh(x * (i + 1)) for i in range(sites)]
            return summaries(values) if summaries else jnp.stack([v.sum() for v in values])

        return run

    variants = {
        "none": None,
        "one program per site": lambda values: jnp.stack([packed_summary(v, 64) for v in values]),
        "one batch": lambda values: jnp.stack(step_rows(values, 64)),
    }
    x = jax.random.normal(jax.random.key(0), shape)
    out = {}
    for name, summaries in variants.items():
        start = time.perf_counter()
        compiled = jax.jit(program(summaries)).lower(x).compile()
        compile_s = time.perf_counter() - start
        jax.block_until_ready(compiled(x))
        seconds = []
        for _ in range(runs):
            start = time.perf_counter()
            jax.block_until_ready(compiled(x))
            seconds.append(time.perf_counter() - start)
        out[name] = (compile_s, statistics.median(seconds))
    none = out.pop("none")
    return {name: ((c - none[0]) / sites, (r - none[1]) / sites) for name, (c, r) in out.items()}


def main(
    layers: int, batch: int, length: int, calls: int, rounds: int, compile_rounds: int, log_dir_only: bool
):
    print(f"{layers}-layer transformer, width 128, batch {batch} x {length} tokens; {calls} steps a round")
    names = [BASE, "watch(model)", LOGGED] if log_dir_only else list(VARIANTS)
    times, traces, sites = step_times(layers, batch, length, calls, rounds, names)
    ratios = paired_ratios(times, BASE)
    notes = {
        "without watch, again": "the same step again: how far identical steps read apart",
        "watch(model)": "target <= 1.10x",
        LOGGED: "reported; against watch(model) below",
        "watch(model, every=10)": "target <= 1.02x",
        'capture(keep="summary")': "target <= 1.10x",
        "watch(model, methods=True)": "reported",
    }
    for name, t in times.items():
        per_step = statistics.median(t) / calls * 1e3
        count = f", {sites[name]} sites" if name in sites else ""
        print(f"{name:28s} {per_step:8.2f} ms/step, traced {traces[name]}x{count}")
    print(f"median over {rounds} rounds of the ratio to the baseline in the same round [95% interval]:")
    for name, note in notes.items():
        if name in times:
            low, high = paired_ratio_interval(times, name, BASE)
            print(f"{name + ' / without:':40s} {ratios[name]:.3f}x [{low:.3f}, {high:.3f}] ({note})")
    logged = paired_ratios(times, "watch(model)")[LOGGED]
    low, high = paired_ratio_interval(times, LOGGED, "watch(model)")
    print(f"{LOGGED + ' / watch(model):':40s} {logged:.3f}x [{low:.3f}, {high:.3f}] (target <= 1.02x)")
    if log_dir_only:
        return

    compiles = first_two_calls(layers, batch, length, compile_rounds)
    compile_ratios = paired_ratios(compiles, BASE)
    print(f"first two calls of a new step (trace, compile, run), median of {compile_rounds}:")
    for name, t in compiles.items():
        low, high = paired_ratio_interval(compiles, name, BASE)
        note = " (target <= 1.3x)" if name == "watch(model)" else ""
        print(
            f"{name:28s} {statistics.median(t):6.2f} s, {compile_ratios[name]:.3f}x "
            f"[{low:.3f}, {high:.3f}] of the baseline's{note}"
        )

    # What one more site costs: the difference methods=True makes, per site it adds.
    extra = sites["watch(model, methods=True)"] - sites["watch(model)"]
    compile_extra = statistics.median(compiles["watch(model, methods=True)"]) - statistics.median(
        compiles["watch(model)"]
    )
    step_extra = np.median(np.subtract(times["watch(model, methods=True)"], times["watch(model)"])) / calls
    print(
        f"each of the {extra} sites methods=True adds: {compile_extra / extra * 1e3:.1f} ms of compile, "
        f"{step_extra / extra * 1e6:.1f} us a step"
    )
    shape = (batch, length, 128)
    for sites in (8, 64):
        print(f"what each of {sites} summarized values of shape {shape} adds to a compiled program:")
        for name, (compile_s, run_s) in per_site_costs(sites, shape).items():
            print(f"  {name:22s} {compile_s * 1e3:7.1f} ms of compile, {run_s * 1e6:7.1f} us a run")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8, help="transformer blocks (at least 4)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=64, help="tokens per sequence")
    parser.add_argument("--calls", type=int, default=10, help="steps per variant per round")
    parser.add_argument("--rounds", type=int, default=31, help="paired rounds")
    parser.add_argument("--compile-rounds", type=int, default=3, help="new steps compiled per variant")
    parser.add_argument(
        "--log-dir-only",
        action="store_true",
        help="time only the baseline, watch(model) and watch(model, log_dir=...); skip the rest",
    )
    args = parser.parse_args()
    try:
        main(
            args.layers,
            args.batch,
            args.length,
            args.calls,
            args.rounds,
            args.compile_rounds,
            args.log_dir_only,
        )
    finally:
        shutil.rmtree(LOG_DIR, ignore_errors=True)
