"""Capture basics, as a marimo notebook: the first tutorial for marimo users.

Open it with ``marimo edit notebooks/05_marimo_capture.py``, serve it with
``marimo run``, or run it as a script with ``python notebooks/05_marimo_capture.py``,
which prints the captures' tables (a script shows no cell outputs).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import jax
    import jax.numpy as jnp
    import marimo as mo
    from flax import nnx

    from jaxcapture_nb import capture, summarize

    return capture, jax, jnp, mo, nnx, summarize


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # Capture basics, in marimo

    `jaxcapture_nb` records every tensor a Flax model *sows* while your code runs, with its shape,
    statistics and histogram computed on the device. This notebook shows the three pieces
    everything else is built on:

    1. `capture(model)`: a context manager that records what the model sows;
    2. `summarize(x)`: statistics and an exact histogram of any array, inside or outside `jit`;
    3. `Capture.first_nonfinite()`: where a NaN or Inf first appears.

    The widgets are anywidgets: in marimo, show one with `mo.ui.anywidget(widget)`.

    ## A small model that sows

    `Module.sow` marks a tensor as worth looking at. Outside a capture it does (almost) nothing
    useful; inside one, every sowed value is recorded.
    """)
    return


@app.cell
def _(jax, nnx):
    class ConvNet(nnx.Module):
        def __init__(self, rngs):
            self.conv = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
            self.bn = nnx.BatchNorm(8, rngs=rngs)
            self.dropout = nnx.Dropout(0.2, rngs=rngs)
            self.head = nnx.Linear(8 * 8 * 8, 10, rngs=rngs)

        def __call__(self, x):
            h = nnx.relu(self.bn(self.conv(x)))
            self.sow(nnx.Intermediate, "features", h)
            logits = self.head(self.dropout(h).reshape(x.shape[0], -1))
            self.sow(nnx.Intermediate, "logits", logits)
            return logits

    model = ConvNet(nnx.Rngs(0))
    model.eval()  # deterministic: BatchNorm uses running stats, Dropout is off
    images = jax.random.normal(jax.random.key(1), (16, 8, 8, 1))
    return (images, model)


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## `capture()`

    Everything sowed inside the block is recorded, in execution order. The capture's text is a
    table: one row per sowed value, with rounded statistics.
    """)
    return


@app.cell
def _(capture, images, mo, model):
    with capture(model) as cap:
        model(images)

    mo.plain_text(str(cap))
    return (cap,)


@app.cell
def _(cap, mo):
    features = cap.records[0]
    mo.md(f"""
    Each row is a `Record` with the value itself and its `Summary`: `{features.site}` is a
    `{features.dtype}` array of shape `{features.shape}`, and the first bins of its histogram
    count `{features.summary.hist[:8].tolist()}`.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The same capture as a widget

    `cap.show()` is the capture as an interactive table; `mo.ui.anywidget` puts it in the page.
    Click a row: under the table appear that value's histogram and a heatmap of its values.

    **Reading the heatmap.** It shows a 2-D slice of the array, one coloured square per element:
    rows follow the second-to-last axis, top to bottom, and columns the last axis, left to right.
    `features` is shaped (batch, height, width, channels) = (16, 8, 8, 8), so its heatmap is one
    row of pixels of one image: 8 pixels down, 8 channels across. The index boxes above it choose
    the slice (which image, which row); the colour bar gives the values of the colours, which span
    the mean ± 3 standard deviations of the whole array. Hover a square to read its index and
    value.
    """)
    return


@app.cell
def _(cap, mo):
    mo.ui.anywidget(cap.show())
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    `methods=True` also records the output of every submodule call, and `include=` keeps only the
    sites whose dotted path matches a regular expression:
    """)
    return


@app.cell
def _(capture, images, mo, model):
    with capture(model, methods=True, include=r"conv|bn") as calls:
        model(images)

    mo.plain_text(str(calls))
    return (calls,)


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## In a jitted training loop

    Under `keep="summary"` the statistics are computed *inside* the compiled step and only the
    small summaries leave the device; memory stays flat however long the loop runs, and the step
    is traced and compiled once. Each site keeps the summary of its latest value: the `call`
    column says which, 99 for the hundredth step.
    """)
    return


@app.cell
def _(capture, images, mo, model, nnx):
    @nnx.jit
    def step(model, x):
        return model(x).sum()

    with capture(model, keep="summary") as steps:
        for i in range(100):
            step(model, images * (1 + i / 100))

    mo.plain_text(str(steps))
    return (steps,)


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## `summarize()` on its own

    `summarize` works on any pytree of arrays and inside `jax.jit`, `vmap` and `scan`. Counts are
    exact integers, including NaN and Inf counts:
    """)
    return


@app.cell
def _(jnp, mo, summarize):
    s = summarize(jnp.array([0.0, 1.0, 2.0, 3.0, jnp.nan, jnp.inf]), bins=4)
    mo.md(f"""
    count {int(s.count)}, NaN {int(s.nan_count)}, +Inf {int(s.posinf_count)}, zeros {int(s.zero_count)};
    mean {float(s.mean)}, histogram `{s.hist.tolist()}` over the edges `{s.edges.tolist()}`.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Finding the first NaN

    A model that takes the log of a ReLU output produces `-inf` where the activation is zero.
    `first_nonfinite()` names the first site, in execution order, where that happens.
    """)
    return


@app.cell
def _(capture, jax, jnp, mo, nnx):
    class Fragile(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)
            self.out = nnx.Linear(4, 1, rngs=rngs)

        def __call__(self, x):
            h = nnx.relu(self.linear(x))
            self.sow(nnx.Intermediate, "hidden", h)
            logh = jnp.log(h)
            self.sow(nnx.Intermediate, "log_hidden", logh)
            y = self.out(logh)
            self.sow(nnx.Intermediate, "output", y)
            return y

    fragile = Fragile(nnx.Rngs(0))
    with capture(fragile) as fragile_cap:
        fragile(jax.random.normal(jax.random.key(2), (8, 4)))

    bad = fragile_cap.first_nonfinite()
    mo.vstack(
        [
            mo.md(
                f"First non-finite site: `{bad.site}` ({bad.nonfinite_count} of {bad.summary.shape} values)."
            ),
            mo.ui.anywidget(fragile_cap.show()),
        ]
    )
    return (bad,)


@app.cell
def _(bad, calls, cap, mo, steps):
    # Run as a script, marimo runs every cell but shows no output: print what the cells show.
    if not mo.running_in_notebook():
        print(f"capture(model):\n{cap}\n")
        print(f"capture(model, methods=True, include=r'conv|bn'):\n{calls}\n")
        print(f'capture(model, keep="summary"), 100 jitted steps:\n{steps}\n')
        print(f"First non-finite site: {bad.site} ({bad.nonfinite_count} of {bad.summary.shape} values).")
    return


if __name__ == "__main__":
    app.run()
