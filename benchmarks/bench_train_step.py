"""An nnx.jit adam step that captures and summarizes four activations.

Target: the step under capture(keep="summary"), whose summaries are computed
inside the jit, takes at most 1.05x the step under capture(keep="last"),
which captures the same activations without summarizing them. Both variants
must trace at most twice over the whole run.
"""

import jax
import jax.numpy as jnp
import optax
from _timing import compare
from flax import nnx

from jaxcapture_nb import capture


class MLP(nnx.Module):
    def __init__(self, width: int, depth: int, rngs: nnx.Rngs):
        self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = nnx.relu(layer(x))
            self.sow(nnx.Intermediate, f"act{i}", x)
        return x


def main(width: int = 1024, depth: int = 4, batch: int = 256, steps_per_call: int = 5):
    model = MLP(width, depth, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-4), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (batch, width))
    y = jax.random.normal(jax.random.key(2), (batch, width))
    traces = []

    @nnx.jit
    def train_step(model, optimizer, x, y):
        traces.append(1)

        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    captures = {keep: capture(model, keep=keep) for keep in ("last", "summary")}
    trace_counts = {}

    def run(keep):
        def steps():
            with captures[keep]:
                for _ in range(steps_per_call):
                    loss = train_step(model, optimizer, x, y)
            return loss

        return steps

    variants = {
        "captured, not summarized (keep='last')": run("last"),
        "captured + summarized (keep='summary')": run("summary"),
    }
    for keep in ("last", "summary"):
        traces.clear()
        with captures[keep]:
            for _ in range(10):
                train_step(model, optimizer, x, y)
        trace_counts[keep] = len(traces)
    times = compare(variants, rounds=15)
    base = times["captured, not summarized (keep='last')"]
    for name, seconds in times.items():
        print(f"{name:40s} {seconds / steps_per_call * 1e3:8.2f} ms/step  {seconds / base:5.3f}x")
    ratio = times["captured + summarized (keep='summary')"] / base
    print(f"summarized / not summarized: {ratio:.3f}x (target <= 1.05x)")
    print(
        f"traces over 10 calls in one block: keep='last' {trace_counts['last']}, keep='summary' {trace_counts['summary']} (target <= 2)"
    )
    records = captures["summary"].records
    print(f"records kept under keep='summary': {len(records)} ({', '.join(r.site for r in records)})")


if __name__ == "__main__":
    main()
