"""One process of a two-process ``jax.distributed`` run, for test_multiprocess.py.

Usage: ``python multiprocess_worker.py PORT PROCESS_ID OUT_DIR CASE [CASE ...]``
with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``. Each process runs
the same cases on a data-parallel MLP whose batch is split over the 8 CPU
devices of both processes, and writes what it recorded to
``OUT_DIR/<process id>.json``, for the test to compare across processes.

The loops run as training loops do, without waiting for each compiled step,
except on the JAX releases named by :data:`GLOO_HANGS_WITH_STEPS_IN_FLIGHT`. Eager values
and their summaries are never waited for.
"""

import functools
import json
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcapture_nb import capture, capture_grads, summarize, watch
from jaxcapture_nb.views.capture_view import CaptureView

STEPS = 30
BATCH = 32

# On the CPU, with gloo and more than one device per process, plain JAX 0.11.2 and
# older hangs once several calls of one compiled step with collectives are in flight
# (a loop of ``w = step(w, x)`` stops within a few calls), whatever this package does;
# JAX 0.12.0 and later run such loops. On the older releases every loop here waits
# for its step before starting the next, and test_multiprocess.py restarts a launch
# that hangs all the same.
GLOO_HANGS_WITH_STEPS_IN_FLIGHT = jax.__version_info__ < (0, 12, 0)


def stepped(result):
    """What a compiled step returned, waited for where JAX needs it (see GLOO_HANGS_WITH_STEPS_IN_FLIGHT)."""
    return jax.block_until_ready(result) if GLOO_HANGS_WITH_STEPS_IN_FLIGHT else result


@functools.cache
def mesh() -> jax.sharding.Mesh:
    """Every device of both processes, on one axis (of the automatic kind: XLA shards each op)."""
    return jax.sharding.Mesh(np.array(jax.devices()), ("batch",))


def summary_data(nan: bool = True) -> np.ndarray:
    """The values of a global array of the summarize case: zeros, an Inf, and a NaN if ``nan``.

    ``jax.device_put`` checks that every process passes the same values,
    with ``==``, which no NaN passes.
    """
    data = np.random.default_rng(0).normal(size=(64, 12)).astype(np.float32)
    data[:, 0] = 0.0
    data[3, 5], data[40, 7] = (np.nan if nan else 0.5), np.inf
    return data


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(4, 16, rngs=rngs)
        self.out = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("h", nnx.relu(self.hidden(x)))
        self.sow(nnx.Intermediate, "act", h)
        self.sow(nnx.Intermediate, "grid", h.reshape(-1, 4, 4))  # three dimensions, the batch first
        return self.out(h)


def split_over_batch(values: np.ndarray) -> jax.Array:
    """A global array whose first axis is split over every device of both processes."""
    return jax.make_array_from_callback(values.shape, NamedSharding(mesh(), P("batch")), lambda i: values[i])


@functools.cache
def setup():
    """The model, its optimizer and a batch, shared by every case.

    One model keeps its compiled steps: a watch whose settings an earlier
    block had reuses that block's step rather than compiling it again.
    """
    model = MLP(nnx.Rngs(0))
    nnx.update(model, jax.device_put(nnx.state(model), NamedSharding(mesh(), P())))
    optimizer = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)
    rng = np.random.default_rng(1)
    x = split_over_batch(rng.normal(size=(BATCH, 4)).astype(np.float32))
    y = split_over_batch(rng.normal(size=(BATCH, 1)).astype(np.float32))
    return model, optimizer, x, y


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def predict(model, x):
    """The model's output without its sows, for steps outside any watch or capture.

    A sow outside one stores into the model, which then changes with every
    call, and ``nnx.jit`` would trace the step again each time.
    """
    return model.out(nnx.relu(model.hidden(x)))


forward = nnx.jit(predict)


@nnx.jit
def plain_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda model: jnp.mean((predict(model, x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss


def history(w) -> dict:
    """Every recorded row of a watch, by site and by scalar."""
    stream = w.stream
    out = {}
    for key, s in [*stream.series.items(), *((("scalar", k), s) for k, s in stream.scalars.items())]:
        out[repr(key)] = {
            "steps": s.steps[: s.size].tolist(),
            "stats": s.stats[: s.size].tolist(),
            "hists": s.hists[: s.size].tolist(),
        }
    return out


def case_summarize() -> dict:
    made = split_over_batch(summary_data())
    put = jax.device_put(summary_data(nan=False), NamedSharding(mesh(), P("batch", None)))
    out = {}
    for name, s in summarize({"made": made, "put": put}, bins=16).items():
        out[name] = {"stats": s.stats.tolist(), "counts": s.counts.tolist(), "shape": list(s.shape)}
    return out


def case_watch_jit() -> dict:
    model, optimizer, x, y = setup()
    with watch(model, display=False) as w:
        for step in range(STEPS):
            w.log(step=step, loss=stepped(train_step(model, optimizer, x, y)))
    return history(w)


def case_watch_eager() -> dict:
    # Eager sows between compiled steps: each sow's summary is a program over
    # both processes' devices, as is each step (its gradient is summed over
    # the batch), and both must start in the same order on each process.
    model, optimizer, x, y = setup()
    with watch(model, display=False) as w:
        for step in range(STEPS):
            stepped(train_step(model, optimizer, x, y))
            model(x * (step + 1))
    return history(w)


def case_watch_update() -> dict:
    model, optimizer, x, y = setup()
    with watch(display=False) as w:
        for step in range(STEPS):
            loss = stepped(plain_step(model, optimizer, x, y))
            w.update(step, {"input": x * (step + 1), "output": forward(model, x), "loss": loss})
            w.log(step=step, loss=loss, per_example=(forward(model, x) - y)[:, 0] ** 2)
    return history(w)


def case_watch_grads() -> dict:
    model, optimizer, x, y = setup()
    with watch(model, grads=True, display=False) as w:
        for step in range(STEPS):
            w.log(step=step, loss=stepped(train_step(model, optimizer, x, y)))
    return history(w)


def capture_case(keep: str) -> dict:
    model, optimizer, x, y = setup()
    with capture(model, keep=keep, grads=True) as cap:
        train_step(model, optimizer, x, y)
        model(x.at[5, 1].set(jnp.nan))  # an eager call whose values hold NaNs
    view = CaptureView(cap)
    heatmaps = []
    for i, site in enumerate(view._sites):
        for index in ([0], [20]) if site["shape"] and len(site["shape"]) == 3 else ([],):
            view._selected, view._slice_index = i, index
            heatmaps.append([i, index, view._heatmap_shape, view._heatmap_note])
    found = cap.first_nonfinite()
    return {
        "table": cap.table(),
        "sites": [{k: v for k, v in site.items() if k != "note"} for site in view._sites],
        "notes": [site["note"] for site in view._sites],
        "stats": np.frombuffer(view._stats).tolist(),
        "hists": np.frombuffer(view._hists, np.int32).tolist(),
        "first_nonfinite": None if found is None else [found.site, found.var_type.__name__],
        "heatmaps": heatmaps,
        "plotted": len(cap.plot().axes),
        "repr": repr(view),
    }


def case_capture_grads() -> dict:
    model, _, x, y = setup()
    return {"table": capture_grads(loss_fn, model, x, y).table()}


CASES = {
    "summarize": case_summarize,
    "watch_jit": case_watch_jit,
    "watch_eager": case_watch_eager,
    "watch_update": case_watch_update,
    "watch_grads": case_watch_grads,
    "capture_all": lambda: capture_case("all"),
    "capture_last": lambda: capture_case("last"),
    "capture_summary": lambda: capture_case("summary"),
    "capture_grads": case_capture_grads,
}


def main(port: int, process: int, out: pathlib.Path, cases: list[str]) -> None:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=process)
    jax.config.update("jax_numpy_rank_promotion", "raise")
    results = {}
    for name in cases:
        started = time.perf_counter()
        results[name] = CASES[name]()
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    (out / f"{process}.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4:])
