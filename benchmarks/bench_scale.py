"""What watching costs at scale: compile on many sites, host work per site, memory over a long run.

Four parts, each printing ratios measured side by side in one run:

- ``compile``: the first call of a jitted forward pass of two public-style
  models (``tests/public_style.py``: a ResNet with BatchNorm and a Qwen3-style
  decoder with grouped-query attention), every method output a site
  (``methods=True``), under ``capture(keep="summary")`` and under ``watch()``,
  against the same first call with nothing watching. Target: at most 1.5x.
  Also printed: compile seconds each site adds.
- ``fresh``: the first result a user waits for in a new process, from
  entering the block to the result ready (the summary program's compile
  included): ``capture(keep="summary", methods=True)`` to its table and
  ``watch(methods=True)`` to its recorded row, around the first call of the
  decoder's jitted forward pass, against that call alone. Each with
  nothing kept on disk (cold), with the summary programs an earlier process
  kept (``JAXCAPTURE_NB_CACHE_DIR``), and with JAX's own compilation cache
  switched on and warm as well. Target: at most 1.5x.
- ``host``: a tiny jitted step sowing 50 small values, under
  ``watch(every=1)`` and ``watch(every=10)``, against the step with its sows
  switched off. Targets: at most 2 us (every=1) and 0.5 us (every=10) of
  extra time per site per step. Beside them: what one more node in the
  model's graph costs a call in Flax, the watch of a step that sows
  nothing, the cost of one more site, and 50 modules sowing one value each.
- ``soak``: 50,000 steps of that step under ``watch(every=1)``, publishing
  from a thread and from the loop, printing the process's resident memory,
  Python's allocated blocks and JAX's live arrays every 5,000 steps. Target:
  from step 10,000 on it grows by less than 32 MiB.

Run all four with ``python benchmarks/bench_scale.py``, or one with
``--part compile`` (or ``fresh``, ``host``, ``soak``).
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from _timing import paired_ratio_interval, paired_ratios, samples_inside
from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from public_style import GqaDecoder, ResNet  # noqa: E402

from jaxcapture_nb import capture, watch  # noqa: E402
from jaxcapture_nb.upstream import flax_internals  # noqa: E402

SITES = 50


def forward_first_call(make_model, inputs, block) -> tuple[float, int]:
    """Seconds of the first call of a new jitted forward pass, and the sites the block recorded."""
    model = make_model()
    forward = nnx.jit(lambda model, x: model(x))
    context = block(model) if block else None
    if context is not None:
        context.__enter__()
    try:
        start = time.perf_counter()
        jax.block_until_ready(forward(model, inputs))
        seconds = time.perf_counter() - start
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    if context is None:
        return seconds, 0
    sites = len(context.stream.series) if hasattr(context, "stream") else len(context.records)
    return seconds, sites


COMPILE_VARIANTS = {
    "plain": None,
    'capture(keep="summary")': lambda m: capture(m, keep="summary", methods=True),
    "watch()": lambda m: watch(m, methods=True, display=False),
    'capture(keep="all")': lambda m: capture(m, keep="all", methods=True),
}


def compile_part(rounds: int) -> None:
    for title, (make_model, make_inputs) in MODELS.items():
        inputs = make_inputs()
        times: dict[str, list[float]] = {name: [] for name in COMPILE_VARIANTS}
        sites = 0
        order = list(COMPILE_VARIANTS)
        # One round first, untimed: JAX's own caches (jnp functions jit
        # themselves) and the summary program, compiled once per table size,
        # warm up once per process, not once per model (``--part fresh``
        # times a new process).
        for i in range(rounds + 1):
            for name in order[i % len(order) :] + order[: i % len(order)]:
                seconds, n = forward_first_call(make_model, inputs, COMPILE_VARIANTS[name])
                sites = max(sites, n)
                if i:
                    times[name].append(seconds)
        ratios = paired_ratios(times, "plain")
        base = statistics.median(times["plain"])
        print(f"{title}: {sites} sites (methods=True), first call of a jitted forward, {rounds} rounds")
        for name, t in times.items():
            low, high = paired_ratio_interval(times, name, "plain")
            extra = (statistics.median(t) - base) / max(sites, 1) * 1e3
            target = "" if name in ("plain", 'capture(keep="all")') else "  target <= 1.5x"
            print(
                f"  {name:26s} {statistics.median(t):6.2f} s  {ratios[name]:5.2f}x "
                f"[{low:.2f}, {high:.2f}]  {extra:6.1f} ms/site{target}"
            )


MODELS = {
    "ResNet (BatchNorm), 3 stages": (
        lambda: ResNet(rngs=nnx.Rngs(0)),
        lambda: jax.random.normal(jax.random.key(0), (8, 16, 16, 1)),
    ),
    "GQA decoder, 6 layers": (
        lambda: GqaDecoder(layers=6, rngs=nnx.Rngs(0)),
        lambda: jax.random.randint(jax.random.key(0), (4, 32), 0, 256),
    ),
}


# Fresh-process models only (``--fresh-models llama-1b``): building one takes
# a minute and 5 GB, too much for every part. Llama 3.2 1B's shapes (1.24B
# parameters, random float32 weights): 16 layers of width 2048, 32 query and
# 8 key-value heads of 64, an MLP of 8192, a vocabulary of 128256, 32 tokens.
LARGE_MODELS = {
    "Llama 3.2 1B shapes, 16 layers": (
        lambda: GqaDecoder(
            vocab=128_256,
            width=2048,
            hidden=8192,
            layers=16,
            heads=32,
            kv_heads=8,
            head_dim=64,
            rngs=nnx.Rngs(0),
        ),
        lambda: jax.random.randint(jax.random.key(0), (1, 32), 0, 128_256),
    ),
}


def first_result(make_model, inputs, variant: str) -> float:
    """Seconds from entering the block to its result ready, for a new jitted forward pass.

    ``plain``: the first call's output. ``capture(keep="summary")``: its
    table (every site's summary fetched). ``watch()``: the block's exit,
    with the call's row recorded.
    """
    model = make_model()
    forward = nnx.jit(lambda model, x: model(x))
    start = time.perf_counter()
    if variant == "plain":
        jax.block_until_ready(forward(model, inputs))
    elif variant == "watch()":
        with watch(model, methods=True, display=False) as w:
            forward(model, inputs)
        assert all(s.size == 1 for s in w.stream.series.values()) and w.stream.series
    else:
        with capture(model, keep="summary", methods=True) as cap:
            forward(model, inputs)
        assert cap.table()
    return time.perf_counter() - start


FRESH_VARIANTS = ("plain", 'capture(keep="summary")', "watch()")
# What a new process finds kept: nothing, the package's summary programs
# (kept by an earlier process), or those and JAX's own compilation cache,
# which a user may switch on (jax_compilation_cache_dir), warm for every
# variant's step.
CACHES = ("cold", "programs kept", "programs kept + JAX cache")


def fresh_process_first_result(model: str, variant: str, env: dict[str, str]) -> float:
    """:func:`first_result` in a new process, where nothing was compiled before."""
    script = (
        "import sys; sys.path[:0] = [{bench!r}, {tests!r}]\n"
        "import bench_scale as b\n"
        "make_model, make_inputs = {{**b.MODELS, **b.LARGE_MODELS}}[{model!r}]\n"
        "inputs = make_inputs()\n"
        "print(b.first_result(make_model, inputs, {variant!r}))\n"
    ).format(
        bench=str(pathlib.Path(__file__).resolve().parent),
        tests=str(pathlib.Path(__file__).resolve().parents[1] / "tests"),
        model=model,
        variant=variant,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return float(done.stdout.split()[-1])


def cache_env(cache: str, folder: pathlib.Path) -> dict[str, str]:
    """The environment of a process that finds ``cache`` kept in ``folder``; a cold one gets a new folder."""
    if cache == "cold":
        return {"JAXCAPTURE_NB_CACHE_DIR": tempfile.mkdtemp(dir=folder)}
    env = {"JAXCAPTURE_NB_CACHE_DIR": str(folder / "programs")}
    if cache == "programs kept + JAX cache":
        env.update(
            JAX_COMPILATION_CACHE_DIR=str(folder / "jax"),
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
            JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
        )
    return env


def fresh_part(rounds: int, models: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        for title in models:
            for cache in CACHES[1:]:  # fill the kept caches once, untimed
                for name in FRESH_VARIANTS:
                    fresh_process_first_result(title, name, cache_env(cache, folder))
            print(
                f"{title}: from entering the block to its result, in a new process, methods=True, {rounds} rounds"
            )
            for cache in CACHES:
                times: dict[str, list[float]] = {name: [] for name in FRESH_VARIANTS}
                order = list(FRESH_VARIANTS)
                for i in range(rounds):
                    for name in order[i % len(order) :] + order[: i % len(order)]:
                        times[name].append(fresh_process_first_result(title, name, cache_env(cache, folder)))
                ratios = paired_ratios(times, "plain")
                cells = []
                for name in FRESH_VARIANTS[1:]:
                    low, high = paired_ratio_interval(times, name, "plain")
                    cells.append(
                        f"{name} {statistics.median(times[name]):.2f} s {ratios[name]:.2f}x [{low:.2f}, {high:.2f}]"
                    )
                target = "1.2x" if title in LARGE_MODELS else "1.5x"
                print(
                    f"  {cache:26s} plain {statistics.median(times['plain']):.2f} s, "
                    + ", ".join(cells)
                    + f"  target <= {target}"
                )


class Sowing(nnx.Module):
    """``sites`` small layers in one module, each sowing its output when ``sow`` is on."""

    def __init__(self, sow: bool, rngs: nnx.Rngs, sites: int = SITES):
        self.sow_values = sow
        self.scales = nnx.Param(jax.random.normal(rngs.params(), (sites, 16)))

    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.scales.shape[0]):
            x = jnp.tanh(x * self.scales[i])
            if self.sow_values:
                self.sow(nnx.Intermediate, f"layer{i}", x)
        return x.sum()


class Layer(nnx.Module):
    """One small layer that sows its output when ``sow`` is on."""

    def __init__(self, sow: bool, rngs: nnx.Rngs):
        self.sow_values = sow
        self.scale = nnx.Param(jax.random.normal(rngs.params(), (16,)))

    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.tanh(x * self.scale)
        if self.sow_values:
            self.sow(nnx.Intermediate, "out", x)
        return x


class Layers(nnx.Module):
    """``SITES`` modules of one site each: how most models sow."""

    def __init__(self, sow: bool, rngs: nnx.Rngs):
        self.layers = nnx.List([Layer(sow, rngs) for _ in range(SITES)])

    def __call__(self, x: jax.Array) -> jax.Array:
        for layer in self.layers:
            x = layer(x)
        return x.sum()


def tiny_step():
    return nnx.jit(lambda model, x: model(x))


def with_empty_variable(model: nnx.Module) -> nnx.Module:
    """``model`` with one empty Variable where a sink would go: what Flax charges a call for one more node."""
    flax_internals.set_captures(model, (nnx.Intermediate({}),))
    return model


# (title, sites, model with or without sows, steps a round)
HOST_MODELS = [
    (f"one module sowing {SITES} values", SITES, lambda sow: Sowing(sow, nnx.Rngs(0)), 200),
    (
        f"one module sowing {4 * SITES} values",
        4 * SITES,
        lambda sow: Sowing(sow, nnx.Rngs(0), 4 * SITES),
        100,
    ),
    (f"{SITES} modules sowing one value each", SITES, lambda sow: Layers(sow, nnx.Rngs(0)), 20),
]
HOST_TARGETS = {"watch(every=1)": 2.0, "watch(every=10)": 0.5}


def host_part(rounds: int, steps: int) -> None:
    """Extra time per step and per site of watching a tiny jitted step, against its sows switched off.

    Beside the targets: the same step with one empty Variable in its graph
    and no watch (the least any value leaving through the model's state
    can cost in Flax), and the watch of a step that sows nothing. The
    second model, with four times the sites, gives the cost of one more
    site, apart from what a step costs whatever it sows.
    """
    x = jnp.ones((8, 16))
    extra_per_step = {}
    for title, sites, make, model_steps in HOST_MODELS:
        model_steps = max(1, model_steps * steps // 200)
        variants = {
            "sows off": (make(False), None),
            "one empty Variable": (with_empty_variable(make(False)), None),
            "watch(), sows off": (make(False), lambda m: watch(m, display=False, every=10)),
            "watch(every=1)": (make(True), lambda m: watch(m, display=False, every=1)),
            "watch(every=10)": (make(True), lambda m: watch(m, display=False, every=10)),
        }
        runs, blocks = {}, {}
        for name, (model, block) in variants.items():
            step = tiny_step()
            if block is not None:
                blocks[name] = block(model).__enter__()

            def run(model=model, step=step, name=name, model_steps=model_steps, blocks=blocks):
                for _ in range(model_steps):
                    out = step(model, x)
                jax.block_until_ready(out)
                if name in blocks:
                    blocks[name].stream.settle()
                return out

            runs[name] = run
        times = samples_inside(runs, blocks, rounds=rounds)
        ratios = paired_ratios(times, "sows off")
        print(f"A jitted step of {title} (8x16 each), {model_steps} steps a round, {rounds} rounds")
        for name, t in times.items():
            extra = (np.array(t) - np.array(times["sows off"])) / model_steps * 1e6
            per_site = extra / sites
            low, high = np.percentile(per_site, [25, 75])
            extra_per_step[title, name] = float(np.median(extra))
            line = (
                f"  {name:20s} {statistics.median(t) / model_steps * 1e3:7.3f} ms/step  {ratios[name]:5.2f}x"
            )
            if name != "sows off":
                line += f"  {np.median(extra):7.1f} us/step  {np.median(per_site):5.2f} us/site/step"
                line += f" (quartiles {low:.2f}, {high:.2f})"
            if name in HOST_TARGETS:
                line += f"  target <= {HOST_TARGETS[name]}"
            print(line)
    (few, _, _, _), (many, more, _, _) = HOST_MODELS[0], HOST_MODELS[1]
    for name in HOST_TARGETS:
        marginal = (extra_per_step[many, name] - extra_per_step[few, name]) / (more - SITES)
        print(f"{name}: one more site in one module adds {marginal:.2f} us a step")


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak_part(steps: int, publishes: tuple[str, ...] = ("thread", "loop")) -> None:
    """Resident memory over a long watched run, publishing from a thread (the default) and from the loop.

    Beside the resident memory: Python's allocated blocks and JAX's live
    arrays, which stay flat when nothing the stream holds grows.
    """
    x = jnp.ones((8, 16))
    for publish in publishes:
        model, step = Sowing(True, nnx.Rngs(0)), tiny_step()
        print(
            f"watch(every=1, publish={publish!r}) over {steps} steps of a {SITES}-site step, keep_steps=500"
        )
        marks = {}
        start = time.perf_counter()
        with watch(model, display=False, every=1, keep_steps=500, publish=publish) as w:
            for i in range(1, steps + 1):
                out = step(model, x)
                if i % 5000 == 0:
                    jax.block_until_ready(out)
                    w.stream.settle()
                    marks[i] = resident_mib()
                    print(
                        f"  step {i:6d}: {marks[i]:8.1f} MiB resident, {sys.getallocatedblocks():8d} Python "
                        f"blocks, {len(jax.live_arrays()):3d} live arrays  ({time.perf_counter() - start:.0f} s)"
                    )
        after = {i: m for i, m in marks.items() if i >= 10_000}
        if after:
            growth = max(after.values()) - after[min(after)]
            print(f"  growth from step 10000 on: {growth:.1f} MiB (target < 32 MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["compile", "fresh", "host", "soak", "all"], default="all")
    parser.add_argument("--fresh-rounds", type=int, default=5)
    parser.add_argument(
        "--fresh-models",
        choices=["decoder", "all", "llama-1b"],
        default="decoder",
        help="the GQA decoder, both small models, or a decoder of Llama 3.2 1B's shapes",
    )
    parser.add_argument("--compile-rounds", type=int, default=5)
    parser.add_argument("--host-rounds", type=int, default=21)
    parser.add_argument("--host-steps", type=int, default=200)
    parser.add_argument("--soak-steps", type=int, default=50_000)
    parser.add_argument("--soak-publish", choices=["thread", "loop", "both"], default="both")
    args = parser.parse_args()
    if args.part in ("compile", "all"):
        compile_part(args.compile_rounds)
    if args.part in ("fresh", "all"):
        models = {"decoder": ["GQA decoder, 6 layers"], "all": list(MODELS), "llama-1b": list(LARGE_MODELS)}
        fresh_part(args.fresh_rounds, models[args.fresh_models])
    if args.part in ("host", "all"):
        host_part(args.host_rounds, args.host_steps)
    if args.part in ("soak", "all"):
        publishes = ("thread", "loop") if args.soak_publish == "both" else (args.soak_publish,)
        soak_part(args.soak_steps, publishes)


if __name__ == "__main__":
    main()
