"""Runs summaries of sharded arrays on 8 simulated CPU devices; test_sharding.py reads its report.

JAX fixes its device count when it starts, and the test process has already
started it with one device, so these cases run in a process of their own::

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/sharding_worker.py out.json

Each case records ``"ok"`` or the first failed check, under its name in
:data:`CASES`. Importing this module does not import JAX.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
import time
import traceback

MESH_KINDS = ("explicit", "auto")
CONTEXTS = ("plain", "set_mesh")
# name: (mesh shape, mesh axes, partition spec entries)
LAYOUTS = {
    "d8-rows": ((8,), ("d",), ("d", None)),
    "2x4-both": ((2, 4), ("a", "b"), ("a", "b")),
    "2x4-columns": ((2, 4), ("a", "b"), (None, "b")),
}
MODEL_APIS = ("capture", "watch", "compare_modes")
SHARD_MAPS = ("jax.shard_map", "nnx.shard_map")

CASES = (
    [f"summarize/{k}/{c}/{layout}" for k, c, layout in itertools.product(MESH_KINDS, CONTEXTS, LAYOUTS)]
    + [f"groups/{k}" for k in MESH_KINDS]
    + [f"shared_histograms/{k}/{layout}" for k, layout in itertools.product(MESH_KINDS, LAYOUTS)]
    + [f"{api}/{k}/{c}" for api, k, c in itertools.product(MODEL_APIS, MESH_KINDS, CONTEXTS)]
    + [f"{api}/{shard_map}" for api, shard_map in itertools.product(("capture", "watch"), SHARD_MAPS)]
)


def _raise(error: Exception) -> None:
    raise error


def main(out_path: str) -> None:
    started = time.perf_counter()
    import contextlib

    import jax
    import numpy as np
    from flax import nnx
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxcapture_nb import capture, compare_modes, summarize, watch
    from jaxcapture_nb.modes.comparison import _shared_histograms
    from jaxcapture_nb.stats.summary import Summary

    assert jax.device_count() == 8, jax.devices()
    report: dict[str, str] = {}
    seconds: dict[str, float] = {"imports": time.perf_counter() - started}

    def mesh_of(kind, shape, axes):
        types = (AxisType.Explicit if kind == "explicit" else AxisType.Auto,) * len(axes)
        return jax.make_mesh(shape, axes, axis_types=types)

    def context(kind_of_context, mesh):
        return jax.set_mesh(mesh) if kind_of_context == "set_mesh" else contextlib.nullcontext()

    def compiled(fn, *args):
        """``fn(*args)``, compiled, after checking that the program gathers no array."""
        program = jax.jit(fn).lower(*args).compile()
        assert "all-gather" not in program.as_text(), "the compiled program gathers the array"
        return program(*args)

    def data(shape, seed):
        # Integers in [-30, 30] and the range fixed at +-31.5: with 63 bins
        # every value sits in the middle of a bin of width 1.
        rng = np.random.default_rng(seed)
        x = rng.integers(-30, 31, shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[:2] = -31.5, 31.5
        flat[5], flat[7], flat[11] = np.nan, np.inf, -np.inf
        return x

    def check(summary: Summary, x: np.ndarray) -> None:
        v = np.asarray(x, np.float64).ravel()
        finite = v[np.isfinite(v)]
        s = summary.to_numpy()
        counts = (int(s.count), int(s.nan_count), int(s.posinf_count), int(s.neginf_count), int(s.zero_count))
        want = (finite.size, int(np.isnan(v).sum()), int(np.isposinf(v).sum()), int(np.isneginf(v).sum()))
        assert counts == (*want, int((v == 0).sum())), f"counts {counts} != {want}"
        assert (float(s.min), float(s.max)) == (finite.min(), finite.max()), "min/max"
        np.testing.assert_allclose(float(s.mean), finite.mean(), rtol=1e-5, atol=1e-5 * np.abs(finite).mean())
        np.testing.assert_allclose(float(s.std), finite.std(), rtol=1e-5)
        expected, _ = np.histogram(finite, bins=s.bins, range=(float(s.lo), float(s.hi)))
        np.testing.assert_array_equal(s.hist, expected)

    def run(name, fn):
        start = time.perf_counter()
        try:
            fn()
            report[name] = "ok"
        except Exception as error:  # noqa: BLE001 - every failure is reported under its case
            report[name] = f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-4)}"
        seconds[name] = round(time.perf_counter() - start, 2)

    def summarize_case(kind, ctx, layouts):
        """Arrays of one mesh in each layout, summarized eagerly and compiled, in one program each."""
        shape, axes, _ = LAYOUTS[layouts[0]]
        mesh = mesh_of(kind, shape, axes)
        x = data((64, 32), 0)
        with context(ctx, mesh):
            sharded = [jax.device_put(x, NamedSharding(mesh, P(*LAYOUTS[layout][2]))) for layout in layouts]
            eager = summarize(sharded, bins=63)
            jitted = compiled(lambda a: summarize(a, bins=63), sharded)
        for layout, s, t in zip(layouts, eager, jitted, strict=True):
            run(f"summarize/{kind}/{ctx}/{layout}", lambda s=s, t=t: (check(s, x), check(t, x)))

    def groups_case(kind):
        mesh = mesh_of(kind, (8,), ("d",))
        xs = [data((16, 8), i) for i in range(20)]
        sharded = [jax.device_put(x, NamedSharding(mesh, P("d", None))) for x in xs]
        for s, x in zip(summarize(sharded, bins=63), xs, strict=True):
            check(s, x)
        for s, x in zip(compiled(lambda a: summarize(a, bins=63), sharded), xs, strict=True):
            check(s, x)

    def shared_histograms_case(kind, layout):
        shape, axes, spec = LAYOUTS[layout]
        mesh = mesh_of(kind, shape, axes)
        xs = (data((64, 32), 1), data((64, 32), 2) / 2)
        sharded = tuple(jax.device_put(x, NamedSharding(mesh, P(*spec))) for x in xs)
        hists, lo, hi = compiled(lambda a: _shared_histograms(a, bins=63), sharded)
        for hist, x in zip(np.asarray(hists), xs, strict=True):
            finite = x[np.isfinite(x)]
            np.testing.assert_array_equal(
                hist, np.histogram(finite, bins=63, range=(float(lo), float(hi)))[0]
            )

    class Mlp(nnx.Module):
        def __init__(self, rngs):
            self.first = nnx.Linear(8, 16, rngs=rngs)
            self.norm = nnx.BatchNorm(16, rngs=rngs)
            self.second = nnx.Linear(16, 4, rngs=rngs)

        def __call__(self, x):
            h = nnx.relu(self.first(x))
            self.sow(nnx.Intermediate, "hidden", h)
            return self.second(self.norm(h))

    def model_case(api, kind, ctx):
        mesh = mesh_of(kind, (8,), ("d",))
        model = Mlp(nnx.Rngs(0))
        x = jax.random.normal(jax.random.key(1), (32, 8))
        want = np.asarray(nnx.relu(model.first(x)))
        with context(ctx, mesh):
            sharded = jax.device_put(x, NamedSharding(mesh, P("d", None)))
            if api == "compare_modes":
                comparison = compare_modes(model, sharded)
                site = next(s for s in comparison.sites if s.site == "hidden")
                assert site.hists.sum(axis=1).tolist() == [want.size, want.size], site.hists.sum(axis=1)
                return
            step = nnx.jit(lambda m, a: m(a).sum())
            if api == "capture":
                with capture(model, keep="summary") as cap:
                    model(sharded)
                    step(model, sharded)
                summaries = [r.summary for r in cap.records if r.name == "hidden"]
            else:
                with watch(model, display=False, steps="calls") as w:
                    for _ in range(3):
                        step(model, sharded)
                w.stream.settle()
                series = w.stream.series[((), "Intermediate", "hidden")]
                assert series.size == 3, series.size
                assert series.hists[2].sum() == want.size, series.hists[2]
                return
            assert summaries, [r.name for r in cap.records]
            for s in summaries:
                assert int(s.count) == want.size and int(s.hist.sum()) == want.size
                assert float(s.min) == 0.0 and int(s.zero_count) > 0

    def shard_map_step(shard_map, mesh):
        """A data-parallel training step: each device's gradients, averaged with ``pmean`` in a shard_map body."""
        specs = {"mesh": mesh, "in_specs": (P(), P("d"), P("d")), "out_specs": (P(), P())}

        def loss(model, x, y):
            return ((model(x)[:, :1] - y) ** 2).mean()

        if shard_map == "nnx.shard_map":

            @nnx.shard_map(**specs)
            def local(model, x, y):
                value, grads = nnx.value_and_grad(loss)(model, x, y)
                return jax.lax.pmean(value, "d"), jax.lax.pmean(grads, "d")

        else:

            def local(model, x, y):
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)

                def body(params, x, y):
                    value, grads = jax.value_and_grad(lambda p: loss(nnx.merge(graphdef, p, rest), x, y))(
                        params
                    )
                    return jax.lax.pmean(value, "d"), jax.lax.pmean(grads, "d")

                return jax.shard_map(body, **specs)(params, x, y)

        @nnx.jit
        def step(model, optimizer, x, y):
            value, grads = local(model, x, y)
            optimizer.update(model, grads)
            return value

        return step

    class Sowing(nnx.Module):
        def __init__(self, rngs, sows=True):
            self.first = nnx.Linear(8, 16, rngs=rngs)
            self.second = nnx.Linear(16, 4, rngs=rngs)
            self.sows = sows

        def __call__(self, x):
            h = nnx.relu(self.first(x))
            if self.sows:
                self.sow(nnx.Intermediate, "hidden", h)
            return self.second(h)

    def shard_map_case(api, shard_map):
        """A step that sows inside a shard_map body trains as unwatched, and the warning names the site and the fix."""
        import warnings

        import optax

        mesh = mesh_of("explicit", (8,), ("d",))
        rows = NamedSharding(mesh, P("d"))
        x = jax.device_put(jax.random.normal(jax.random.key(1), (32, 8)), rows)
        y = jax.device_put(jax.random.normal(jax.random.key(2), (32, 1)), rows)
        trained = []
        for watched in (False, True):
            # Unwatched, a value sowed in an nnx.shard_map body would leave
            # with the model's state, which out_specs says is replicated: JAX
            # refuses it. The twin that shows what training gives sows nothing.
            model = Sowing(nnx.Rngs(0), sows=watched)
            optimizer = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)
            step = shard_map_step(shard_map, mesh)
            block = capture(model) if api == "capture" else watch(model, display=False)
            with (
                warnings.catch_warnings(record=True) as caught,
                block if watched else contextlib.nullcontext(),
            ):
                warnings.simplefilter("always")
                for _ in range(3):
                    step(model, optimizer, x, y)
            trained.append(jax.tree.map(np.asarray, nnx.state(model, nnx.Param)))
        jax.tree.map(np.testing.assert_array_equal, *trained)
        said = [str(w.message) for w in caught]
        assert any("hidden sowed inside a shard_map body" in m and "out_specs" in m for m in said), said
        if api == "capture":
            assert "none recorded: hidden sowed inside a shard_map body" in block.table(), block.table()

    for k, c in itertools.product(MESH_KINDS, CONTEXTS):
        for layouts in (["d8-rows"], ["2x4-both", "2x4-columns"]):
            start = time.perf_counter()
            try:
                summarize_case(k, c, layouts)
            except Exception as error:  # noqa: BLE001 - reported under each case it covers
                for layout in layouts:
                    run(f"summarize/{k}/{c}/{layout}", functools.partial(_raise, error))
            seconds[f"summarize/{k}/{c}/{layouts[0]}"] += time.perf_counter() - start
    for k in MESH_KINDS:
        run(f"groups/{k}", lambda k=k: groups_case(k))
    for k, layout in itertools.product(MESH_KINDS, LAYOUTS):
        run(f"shared_histograms/{k}/{layout}", lambda k=k, layout=layout: shared_histograms_case(k, layout))
    for api, k, c in itertools.product(MODEL_APIS, MESH_KINDS, CONTEXTS):
        run(f"{api}/{k}/{c}", lambda api=api, k=k, c=c: model_case(api, k, c))
    for api, shard_map in itertools.product(("capture", "watch"), SHARD_MAPS):
        run(f"{api}/{shard_map}", lambda api=api, shard_map=shard_map: shard_map_case(api, shard_map))
    with open(out_path, "w") as f:
        json.dump({"results": report, "seconds": seconds}, f)


if __name__ == "__main__":
    main(sys.argv[1])
