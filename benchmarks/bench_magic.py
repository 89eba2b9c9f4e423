"""%%capture_intermediates overhead on an eager forward pass of a small model.

Target: the magic cell takes at most 1.2x the plain cell plus the construction
(and display) of the widget it shows. Measured on a real IPython shell,
round-robin; displays go to a publisher that drops them, as there is no
front end. Every cell starts from a model without sowed values: a plain
cell's sow would otherwise leave one more value on the model each round,
slowing both cells down as the run goes on.
"""

import statistics

import jax
from _timing import samples
from flax import nnx
from IPython.display import display
from IPython.testing.globalipapp import get_ipython

from jaxcapture_nb import CaptureView, capture


class SmallCNN(nnx.Module):
    def __init__(self, rngs):
        self.conv1 = nnx.Conv(1, 16, kernel_size=(3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(16, rngs=rngs)
        self.conv2 = nnx.Conv(16, 16, kernel_size=(3, 3), rngs=rngs)
        self.head = nnx.Linear(16 * 8 * 8, 10, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.bn(self.conv1(x)))
        self.sow(nnx.Intermediate, "block1", h)
        h = nnx.relu(self.conv2(h))
        self.sow(nnx.Intermediate, "block2", h)
        return self.head(h.reshape(x.shape[0], -1))


def main():
    shell = get_ipython()
    shell.run_line_magic("load_ext", "jaxcapture_nb")
    shell.display_pub.publish = lambda *args, **kwargs: None  # no frontend: drop displays
    model = SmallCNN(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(0), (32, 8, 8, 1))
    shell.user_ns.update(model=model, x=x)

    def run(cell):
        def go():
            assert shell.run_cell(cell).success
            return shell.user_ns["y"]

        return go

    with capture(model) as cap:
        model(x)

    times = samples(
        {
            "plain cell": run("y = model(x)"),
            "widget construction": lambda: display(CaptureView(cap)),
            "magic cell": run("%%capture_intermediates model\ny = model(x)"),
        },
        rounds=101,
        reset=lambda: nnx.pop(model, nnx.Intermediate),
    )
    for name, seconds in times.items():
        print(f"{name:22s} {statistics.median(seconds) * 1e3:8.2f} ms (median of {len(seconds)} rounds)")
    # Each round's magic cell against the same round's plain cell and widget,
    # so a slow spell of the machine cancels out.
    rounds = zip(times["plain cell"], times["widget construction"], times["magic cell"], strict=True)
    ratio = statistics.median(magic / (plain + widget) for plain, widget, magic in rounds)
    print(f"magic / (plain + widget), median over rounds: {ratio:.3f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
