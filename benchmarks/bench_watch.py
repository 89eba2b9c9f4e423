"""watch() on an nnx.jit adam step of a 4-layer width-1024 ReLU MLP, batch 256.

Targets, recording every step:
- watch(model) around the unchanged step: at most 1.10x the step without watch;
- the explicit path (summarize() inside the step, then w.update): at most 1.05x;
- 10,000 steps: host memory flat once the ring of kept steps is full.

"Without watch" is the same step of the same model with its sow calls
switched off: outside a capture, current Flax would keep appending sowed
values to the model, which no training loop wants. "Summaries only"
computes the summaries in the step and returns them as one array that
nothing reads: the cost of the summaries themselves, which both paths pay.
"Without watch, again" is a second copy of the plain step, timed as a
variant of its own: how far its ratio lands from 1.000 shows how much two
identical steps differ on this machine. Each ratio is printed with a 95%
bootstrap interval over the rounds.
"""

import argparse
import gc
import statistics
import tracemalloc

import jax
import jax.numpy as jnp
import optax
from _timing import paired_ratio_interval, paired_ratios, samples
from flax import nnx

from jaxcapture_nb import summarize, watch


class MLP(nnx.Module):
    def __init__(self, width: int, depth: int, rngs: nnx.Rngs, sow: bool = True):
        self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])
        self.sowing = sow

    def __call__(self, x):
        activations = []
        for i, layer in enumerate(self.layers):
            x = nnx.relu(layer(x))
            activations.append(x)
            if self.sowing:
                self.sow(nnx.Intermediate, f"act{i}", x)
        return x, activations


def make_step(summaries: bool, one_output: bool = False):
    """The adam step; with ``summaries``, it also returns ``summarize()`` of the activations.

    ``one_output`` returns them as one flat array instead, which no host
    code reads: the step then costs what computing the summaries costs.
    """

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            out, activations = model(x)
            return jnp.mean((out - y) ** 2), activations

        (loss, activations), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
        optimizer.update(model, grads)
        if not summaries:
            return loss
        tree = summarize(activations)
        if one_output:
            return loss, jnp.concatenate(
                [jnp.ravel(leaf).astype(jnp.float32) for leaf in jax.tree.leaves(tree)]
            )
        return loss, tree

    return train_step


def step_times(width: int, depth: int, batch: int, calls: int, rounds: int):
    """Median seconds per step of each variant, the paired ratios to the plain step, and steps recorded."""
    x = jax.random.normal(jax.random.key(1), (batch, width))
    y = jax.random.normal(jax.random.key(2), (batch, width))

    def setup(sow: bool):
        model = MLP(width, depth, nnx.Rngs(0), sow=sow)
        return model, nnx.Optimizer(model, optax.adam(1e-4), wrt=nnx.Param)

    plain_model, plain_opt = setup(sow=False)
    again_model, again_opt = setup(sow=False)
    watched_model, watched_opt = setup(sow=True)
    explicit_model, explicit_opt = setup(sow=False)
    compute_model, compute_opt = setup(sow=False)
    plain, explicit, compute_only = make_step(False), make_step(True), make_step(True, one_output=True)
    watched = make_step(False)
    hook_watch = watch(watched_model, display=False).__enter__()
    explicit_watch = watch(display=False).__enter__()
    counter = {"explicit": 0}

    def run_plain():
        for _ in range(calls):
            loss = plain(plain_model, plain_opt, x, y)
        return loss

    def run_plain_again():
        for _ in range(calls):
            loss = plain(again_model, again_opt, x, y)
        return loss

    # Each watched run ends by recording everything it sent, so no variant's
    # host work is left to run, and be timed, in the next variant's turn.
    def run_watched():
        for _ in range(calls):
            loss = watched(watched_model, watched_opt, x, y)
        jax.effects_barrier()
        hook_watch.stream.settle()
        return loss

    def run_compute_only():
        for _ in range(calls):
            loss, _ = compute_only(compute_model, compute_opt, x, y)
        return loss

    def run_explicit():
        for _ in range(calls):
            loss, summaries = explicit(explicit_model, explicit_opt, x, y)
            explicit_watch.update(counter["explicit"], summaries)
            counter["explicit"] += 1
        explicit_watch.stream.settle()
        return loss

    try:
        times = samples(
            {
                "without watch": run_plain,
                "without watch, again": run_plain_again,
                "watch(model)": run_watched,
                "explicit path": run_explicit,
                "summaries only": run_compute_only,
            },
            rounds=rounds,
        )
    finally:
        hook_watch.__exit__(None, None, None)
        explicit_watch.__exit__(None, None, None)
    recorded = hook_watch.stream.series[((), "Intermediate", "act0")].calls
    medians = {name: statistics.median(t) / calls for name, t in times.items()}
    ratios = paired_ratios(times, "without watch")
    intervals = {name: paired_ratio_interval(times, name, "without watch") for name in times}
    return medians, ratios, intervals, recorded


def memory_over_steps(steps: int = 10_000, keep_steps: int = 500) -> list[tuple[int, int, int]]:
    """(step, bytes of kept rows, bytes Python holds) at checkpoints of a long run."""
    width, batch = 64, 32
    model = MLP(width, 4, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-4), wrt=nnx.Param)
    step = make_step(False)
    x = jax.random.normal(jax.random.key(1), (batch, width))
    y = jax.random.normal(jax.random.key(2), (batch, width))
    checkpoints = {1_000, 2_500, 5_000, 7_500, steps}
    out = []
    tracemalloc.start()
    with watch(model, keep_steps=keep_steps, display=False) as w:
        for i in range(1, steps + 1):
            loss = step(model, optimizer, x, y)
            w.log(step=i, loss=loss)
            if i in checkpoints:
                jax.block_until_ready(loss)
                jax.effects_barrier()
                w.stream.settle()
                w.view.publish()
                gc.collect()
                out.append((i, w.stream.nbytes(), tracemalloc.get_traced_memory()[0]))
    tracemalloc.stop()
    return out


def main(width: int = 1024, depth: int = 4, batch: int = 256, calls: int = 5, rounds: int = 151):
    medians, ratios, intervals, recorded = step_times(width, depth, batch, calls, rounds)
    for name, seconds in medians.items():
        print(f"{name:20s} {seconds * 1e3:8.2f} ms/step (median of {rounds} rounds)")
    print(f"steps recorded by watch(model): {recorded}")
    print("median over rounds of the ratio to the plain step in the same round [95% interval]:")
    notes = {
        "without watch, again": "the same step again: how far identical steps read apart",
        "watch(model)": "target <= 1.10x",
        "explicit path": "target <= 1.05x",
        "summaries only": "the summaries computed in the step, read by nothing: what any path pays",
    }
    for name, note in notes.items():
        low, high = intervals[name]
        print(f"{name + ' / without:':32s} {ratios[name]:.3f}x [{low:.3f}, {high:.3f}] ({note})")
    print("10,000 steps, keep_steps=500 (4 sites and a loss):")
    for step, kept, held in memory_over_steps():
        print(f"  step {step:6d}: kept rows {kept / 1024:7.1f} KiB, Python heap {held / 2**20:7.2f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=151, help="paired rounds; the intervals narrow as its square root"
    )
    main(rounds=parser.parse_args().rounds)
