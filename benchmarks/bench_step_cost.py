"""What watching adds to a training step of a 24-layer decoder, against the floor of getting the values out.

The decoder has 24 layers, each an attention and an MLP module with their
norms (292 modules in all), sowing 3 values a layer (72 sites). Every
variant runs the same adam step, side by side in each round:

- ``plain``: the step with the model's sows switched off.
- ``floor``: the least any watch can do: the step lays the same 72 values
  out as one table, summarizes it on the device and hands the summaries
  out through one Variable on the root module. Nothing reads them.
- ``watch(...)``: the unchanged step under ``watch(model)``, with
  ``every=1`` and ``every=10``, ``methods=True``, ``log_dir=``, and
  ``steps="calls"`` (each call a step, without telling training steps from
  evaluations: the difference to ``every=1`` is what the telling costs a
  step, target at most 5 us, and the clock's own part of it is timed
  alone at the end); and under ``capture(keep="summary")``.
- the same step written in tree mode (``nnx.jit(graph=False)``) and as an
  ``nnx.cached_partial``, plain and watched; and a ``cached_partial`` made
  before the block, whose values leave by host callback (its first call
  warns, naming the fix): its cost is printed, with no target.

Each call is timed to its end (``block_until_ready``), and a round keeps
each variant's median call. Printed per variant: milliseconds a step (median of rounds), the time added
to ``plain``'s in the same round (median, with a 95% bootstrap interval),
and that added time against the floor's (target: at most 2x for
``watch(every=1)``); for tree mode and cached_partial, watched against
plain (target: at most 1.10x). The watches publish from the loop's thread,
so that each variant pays its own host work in its own turn. ``--tiny``
shrinks the layers, so that the host's part (Flax's own flattening of 292
modules, most of all) is nearly the whole step.

Run with ``python benchmarks/bench_step_cost.py [--tiny] [--rounds N] [--only TEXT ...]``; ``--only``
measures the variants whose names hold TEXT alone, beside plain and the floor (``--only
"every=1" --only "calls"`` gives the detection's cost).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from _timing import paired_ratio_interval, paired_ratios
from flax import nnx

from jaxcapture_nb import capture, watch
from jaxcapture_nb.stats.batch import device_layout, nonfinite_rows, packed_rows, padded_table

# Where a layer's values go: sowed, collected for the floor's table, or nowhere.
SOW, COLLECT, OFF = "sow", "collect", "off"
COLLECTED: list[jax.Array] = []


class Attention(nnx.Module):
    def __init__(self, width: int, heads: int, rngs: nnx.Rngs):
        self.heads = heads
        self.query = nnx.Linear(width, width, rngs=rngs)
        self.key = nnx.Linear(width, width, rngs=rngs)
        self.value = nnx.Linear(width, width, rngs=rngs)
        self.out = nnx.Linear(width, width, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        q, k, v = (
            f(x).reshape(b, t, self.heads, d // self.heads) for f in (self.query, self.key, self.value)
        )
        logits = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(d // self.heads)
        logits = jnp.where(jnp.tril(jnp.ones((t, t), bool)), logits, -1e9)
        mixed = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(logits), v).reshape(b, t, d)
        return self.out(mixed)


class Mlp(nnx.Module):
    def __init__(self, width: int, rngs: nnx.Rngs):
        self.up = nnx.Linear(width, 4 * width, rngs=rngs)
        self.down = nnx.Linear(4 * width, width, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.down(nnx.gelu(self.up(x)))


class Layer(nnx.Module):
    def __init__(self, width: int, heads: int, rngs: nnx.Rngs):
        self.attention_norm = nnx.LayerNorm(width, rngs=rngs)
        self.attention = Attention(width, heads, rngs)
        self.mlp_norm = nnx.LayerNorm(width, rngs=rngs)
        self.mlp = Mlp(width, rngs)
        self.values = SOW

    def keep(self, name: str, value: jax.Array) -> None:
        if self.values == SOW:
            self.sow(nnx.Intermediate, name, value)
        elif self.values == COLLECT:
            COLLECTED.append(value)

    def __call__(self, x: jax.Array) -> jax.Array:
        attended = self.attention(self.attention_norm(x))
        self.keep("attention", attended)
        x = x + attended
        mixed = self.mlp(self.mlp_norm(x))
        self.keep("mlp", mixed)
        x = x + mixed
        self.keep("residual", x)
        return x


class Decoder(nnx.Module):
    def __init__(self, layers: int, width: int, heads: int, vocab: int, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, width, rngs=rngs)
        self.layers = nnx.List([Layer(width, heads, rngs) for _ in range(layers)])
        self.norm = nnx.LayerNorm(width, rngs=rngs)
        self.floor = nnx.Variable(jnp.zeros(()))  # the floor's one root Variable

    def __call__(self, tokens: jax.Array) -> jax.Array:
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.embed.attend(self.norm(x))

    def set_values(self, where: str) -> None:
        for layer in self.layers:
            layer.values = where


def loss_fn(model: Decoder, tokens: jax.Array) -> jax.Array:
    logits = model(tokens[:, :-1])
    return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()


def train_step(model: Decoder, optimizer: nnx.Optimizer, tokens: jax.Array) -> jax.Array:
    loss, grads = nnx.value_and_grad(loss_fn)(model, tokens)
    optimizer.update(model, grads)
    return loss


def floor_step(model: Decoder, optimizer: nnx.Optimizer, tokens: jax.Array) -> jax.Array:
    """The step, its 72 values laid out as one table, summarized, and handed out through ``model.floor``."""

    def with_table(model, tokens):
        COLLECTED.clear()
        loss = loss_fn(model, tokens)
        values = [jax.lax.stop_gradient(v) for v in COLLECTED]
        return loss, padded_table(values)

    (loss, table), grads = nnx.value_and_grad(with_table, has_aux=True)(model, tokens)
    optimizer.update(model, grads)
    sizes = tuple(v.size for v in COLLECTED)
    model.floor.set_value((packed_rows(table, device_layout(sizes), bins=64), nonfinite_rows(table)))
    return loss


def make(tiny: bool) -> tuple[Decoder, nnx.Optimizer, jax.Array]:
    width, heads, time_steps = (16, 2, 8) if tiny else (64, 4, 32)
    model = Decoder(24, width, heads, 64, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    tokens = jax.random.randint(jax.random.key(0), (4, time_steps + 1), 0, 64)
    return model, optimizer, tokens


class Variant:
    """A model, its optimizer and a step, entered in a block (or not) for the whole run."""

    def __init__(self, tiny: bool, values: str, step, block=None, style: str = "graph"):
        self.model, self.optimizer, self.tokens = make(tiny)
        self.model.set_values(values)
        if values == COLLECT:
            self.model.floor.set_value(floor_shapes(self.model, self.tokens))
        if style == "cached, made before":  # made before the block: it compiles without the watch's exit
            cached = nnx.cached_partial(nnx.jit(step), self.model, self.optimizer)
        self.block = block(self.model) if block is not None else None
        if self.block is not None:
            self.block.__enter__()
        if style.startswith("cached"):
            if style == "cached":
                cached = nnx.cached_partial(nnx.jit(step), self.model, self.optimizer)
            self.call = lambda: cached(self.tokens)
        else:
            jitted = nnx.jit(step, graph=style != "tree")
            self.call = lambda: jitted(self.model, self.optimizer, self.tokens)

    def close(self) -> None:
        if self.block is not None:
            self.block.__exit__(None, None, None)


def floor_shapes(model: Decoder, tokens: jax.Array):
    """Zeros of the floor's (summaries, flags), so that its step takes in what it hands out."""
    COLLECTED.clear()
    loss_fn(model, tokens)
    sizes = tuple(v.size for v in COLLECTED)
    table = padded_table([jnp.zeros(v.shape, v.dtype) for v in COLLECTED])
    COLLECTED.clear()
    return packed_rows(table, device_layout(sizes), bins=64), nonfinite_rows(table)


def watching(**options):
    """A watch that publishes from the loop's thread: each variant pays its own host work in its own turn."""
    return lambda model: watch(model, display=False, publish="loop", **options)


def run(tiny: bool, rounds: int, steps: int, only: list[str] | None = None) -> None:
    log_dir = tempfile.mkdtemp()
    variants = {
        "plain": Variant(tiny, OFF, train_step),
        "floor": Variant(tiny, COLLECT, floor_step),
        "watch(every=1)": Variant(tiny, SOW, train_step, watching()),
        'watch(steps="calls")': Variant(tiny, SOW, train_step, watching(steps="calls")),
        "watch(every=10)": Variant(tiny, SOW, train_step, watching(every=10)),
        "watch(methods=True)": Variant(tiny, SOW, train_step, watching(methods=True)),
        "watch(log_dir=)": Variant(tiny, SOW, train_step, watching(log_dir=log_dir)),
        'capture(keep="summary")': Variant(tiny, SOW, train_step, lambda m: capture(m, keep="summary")),
        "tree mode, plain": Variant(tiny, OFF, train_step, style="tree"),
        "tree mode, watch()": Variant(tiny, SOW, train_step, watching(), "tree"),
        "cached_partial, plain": Variant(tiny, OFF, train_step, style="cached"),
        "cached_partial, watch()": Variant(tiny, SOW, train_step, watching(), "cached"),
        "cached_partial, made before": Variant(tiny, SOW, train_step, watching(), "cached, made before"),
    }
    if only:  # one figure alone, beside its references
        variants = {k: v for k, v in variants.items() if k in ("plain", "floor") or any(o in k for o in only)}
    try:
        for variant in variants.values():  # trace and compile, and let the summary programs compile
            for _ in range(3):
                jax.block_until_ready(variant.call())
        time.sleep(2)
        times: dict[str, list[float]] = {name: [] for name in variants}
        order = list(variants)
        for r in range(rounds):
            for name in order[r % len(order) :] + order[: r % len(order)]:
                call = variants[name].call
                calls = []
                for _ in range(steps):
                    start = time.perf_counter()
                    jax.block_until_ready(call())
                    calls.append(time.perf_counter() - start)
                # The median call: a garbage collection that lands in one call is no variant's cost.
                times[name].append(statistics.median(calls))
    finally:
        for variant in variants.values():
            variant.close()
    report(times, tiny, rounds, steps)


def report(times: dict[str, list[float]], tiny: bool, rounds: int, steps: int) -> None:
    ms = {name: np.asarray(t) * 1e3 for name, t in times.items()}
    added = {name: ms[name] - ms["plain"] for name in ms}  # per round, against the same round's plain
    floor = float(np.median(added["floor"]))
    size = "tiny layers (width 16)" if tiny else "width 64"
    print(f"24-layer decoder, 292 modules, 72 sites, {size}: {rounds} rounds of {steps} steps")
    print(f"{'variant':28s} {'ms/step':>8s} {'added ms [95%]':>22s} {'x floor':>8s}")
    for name in times:
        low, high = _interval(added[name])
        versus = (
            float(np.median(added[name])) / floor
            if floor > 0 and name not in ("plain", "floor")
            else float("nan")
        )
        target = "  target <= 2x floor" if name == "watch(every=1)" else ""
        print(
            f"{name:28s} {statistics.median(ms[name]):8.3f} {float(np.median(added[name])):8.3f} "
            f"[{low:6.3f}, {high:6.3f}] {versus:8.2f}{target}"
        )
    if 'watch(steps="calls")' in times and "watch(every=1)" in times:
        # Telling a training step from an evaluation (steps="auto", the default) is decided while
        # the step is traced; a call pays only the clock's question. Paired by round.
        extra = (ms["watch(every=1)"] - ms['watch(steps="calls")']) * 1e3
        low, high = _interval(extra)
        print(
            f"training-step detection (auto - calls): {float(np.median(extra)):+.1f} us a step "
            f"[{low:+.1f}, {high:+.1f}]  target <= 5 us"
        )
    for style in ("tree mode", "cached_partial"):
        if f"{style}, plain" not in times:
            continue
        pair = {k: times[f"{style}, {k}"] for k in ("plain", "watch()")}
        ratio = paired_ratios(pair, "plain")["watch()"]
        low, high = paired_ratio_interval(pair, "watch()", "plain")
        print(f"{style}: watched / plain {ratio:.3f} [{low:.3f}, {high:.3f}]  target <= 1.10x")
    if "cached_partial, made before" in times and "cached_partial, plain" in times:
        # No fast path: its values leave by host callback, and its first call says so, naming the fix.
        pair = {k: times[f"cached_partial, {k}"] for k in ("plain", "made before")}
        ratio = paired_ratios(pair, "plain")["made before"]
        low, high = paired_ratio_interval(pair, "made before", "plain")
        print(
            f"cached_partial made before the block: watched / plain {ratio:.3f} [{low:.3f}, {high:.3f}]  (warns once)"
        )


def clock_cost(repeats: int = 15, calls: int = 20_000) -> None:
    """Prints what telling training steps from evaluations costs a compiled call on the host, alone.

    The question is answered while the step is traced; each call then asks
    the clock once (``StepClock.evaluation``) before it takes its step. Timed
    against the same call counting calls, side by side in each repeat.
    """
    import timeit

    from jaxcapture_nb.core.clock import StepClock

    def per_call(mode: str, trained: bool) -> float:
        clock = StepClock(mode)
        if not trained:
            clock.evaluation(True)  # an evaluation after the first training step
            clock.call()
        step = (
            (lambda: clock.evaluation(True) or clock.call()) if trained else (lambda: clock.evaluation(False))
        )
        return timeit.timeit(step, number=calls) / calls * 1e6

    rounds = [
        (per_call("calls", True), per_call("auto", True), per_call("auto", False)) for _ in range(repeats)
    ]
    counted, trained, evaluated = (np.asarray(column) for column in zip(*rounds, strict=True))
    low, high = _interval(trained - counted)
    print(
        f"clock per call: counting calls {np.median(counted):.2f} us, auto {np.median(trained):.2f} us "
        f"({np.median(trained - counted):+.2f} [{low:+.2f}, {high:+.2f}] us), an evaluation "
        f"{np.median(evaluated):.2f} us  target <= 5 us"
    )


def _interval(values: np.ndarray, resamples: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of ``values``."""
    draws = np.random.default_rng(0).integers(0, len(values), (resamples, len(values)))
    low, high = np.percentile(np.median(values[draws], axis=1), [2.5, 97.5])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tiny", action="store_true", help="layers of width 16: steps of about a millisecond"
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20, help="steps timed together in a round")
    parser.add_argument(
        "--only",
        action="append",
        help="run only the variants whose names hold this text (and plain and floor); may be repeated",
    )
    args = parser.parse_args()
    run(args.tiny, args.rounds, args.steps, args.only)
    clock_cost()


if __name__ == "__main__":
    main()
