"""Every jaxcapture_nb widget in one marimo app, for tests/browser/test_marimo.py.

Served with ``marimo run``; each widget is shown with ``mo.ui.anywidget``.
Cells that the test reads print plain text lines ("label: value") that it
finds on the page.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _():
    import os
    import time

    import jax
    import jax.numpy as jnp
    import marimo as mo
    import optax
    from flax import nnx

    from jaxcapture_nb import capture, compare_modes, mode_panel, watch

    return capture, compare_modes, jax, jnp, mo, mode_panel, nnx, optax, os, time, watch


@app.cell
def _(jax, jnp, nnx):
    class ModeSwitchingRegressor(nnx.Module):
        """Modes to switch (BatchNorm, Dropout) and a 2-D value to draw as a heatmap."""

        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 16, rngs=rngs)
            self.bn = nnx.BatchNorm(16, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.head = nnx.Linear(16, 1, rngs=rngs)

        def __call__(self, x):
            h = self.dropout(nnx.relu(self.bn(self.linear(x))))
            self.sow(nnx.Intermediate, "hidden", h)
            return self.head(h)

    model = ModeSwitchingRegressor(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (32, 4))
    y = jnp.sin(x.sum(axis=1, keepdims=True))
    return ModeSwitchingRegressor, model, x, y


@app.cell
def _(capture, mo, model, x):
    with capture(model) as cap:
        model(x)
    capture_ui = mo.ui.anywidget(cap.show())
    capture_ui  # noqa: B018 - a cell's last expression is its output
    return


@app.cell
def _(compare_modes, mo, model, x):
    compare_ui = mo.ui.anywidget(compare_modes(model, x).show())
    compare_ui  # noqa: B018 - a cell's last expression is its output
    return


@app.cell
def _(mo, mode_panel, model, x):
    panel = mode_panel(model, inputs=(x,))
    panel_ui = mo.ui.anywidget(panel)
    panel_ui  # noqa: B018 - a cell's last expression is its output
    return panel, panel_ui


@app.cell
def _(mo, panel, panel_ui):
    # Referring to panel_ui makes this cell run again whenever the panel's
    # state changes in the browser.
    panel_ui.value  # noqa: B018
    mo.md(f"panel.model dropout.deterministic: {panel.model.dropout.deterministic}")
    return


@app.cell
def _(jax, jnp, mo, nnx):
    from jaxcapture_nb import attribution_patching, patching_sweep

    class Mixer(nnx.Module):
        """Three residual layers over 6 tokens, each mixing in the tokens before."""

        def __init__(self, rngs):
            self.embed = nnx.Embed(5, 8, rngs=rngs)
            self.layers = nnx.List([nnx.Linear(8, 8, rngs=rngs) for _ in range(3)])
            self.unembed = nnx.Linear(8, 5, rngs=rngs)

        def __call__(self, tokens):
            x = self.embed(tokens)
            for layer in self.layers:
                x = x + nnx.gelu(layer(jnp.cumsum(x, axis=1) / 3))
            return self.unembed(x)

    mixer = Mixer(nnx.Rngs(0))
    clean, corrupted = jnp.array([[1, 2, 3, 4, 0, 2]]), jnp.array([[3, 2, 3, 4, 0, 2]])
    sweep_args = (
        mixer,
        clean,
        corrupted,
        lambda z: z[0, -1, 1] - z[0, -1, 3],
        [f"layers.{i}.__call__" for i in range(3)],
    )
    exact = patching_sweep(*sweep_args, positions=range(6), readout=lambda z: jax.nn.softmax(z[0, -1]))
    estimate = attribution_patching(*sweep_args, positions=range(6))
    patching_ui = mo.ui.anywidget(exact.show(estimate))
    patching_ui  # noqa: B018 - a cell's last expression is its output
    return clean, mixer


@app.cell
def _(clean, mixer, mo):
    from jaxcapture_nb import logit_lens

    lens = logit_lens(
        mixer, clean, [f"layers.{i}.__call__" for i in range(3)], readout=lambda m, h: m.unembed(h), top=3
    )
    lens_ui = mo.ui.anywidget(lens.show())
    lens_ui  # noqa: B018 - a cell's last expression is its output
    return


@app.cell
def _(jax, jnp, mo):
    from jaxcapture_nb import attention_patterns

    scores = jax.random.normal(jax.random.key(0), (1, 2, 6, 6))
    causal = jnp.where(jnp.tril(jnp.ones((6, 6), bool)), scores, -1e9)
    attention_ui = mo.ui.anywidget(
        attention_patterns({"layers.0.attention": jax.nn.softmax(causal)}, tokens=list("abcdef")).show()
    )
    attention_ui  # noqa: B018 - a cell's last expression is its output
    return


@app.cell
def _(ModeSwitchingRegressor, jnp, nnx, optax, os, time, watch, x, y):
    live_model = ModeSwitchingRegressor(nnx.Rngs(2))
    optimizer = nnx.Optimizer(live_model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    # The browser test looks at the view while the loop runs, and ends the
    # loop by creating the file JCNB_STOP_TRAINING names; without it the
    # loop runs for a few seconds.
    stop_file = os.environ.get("JCNB_STOP_TRAINING")
    end = time.monotonic() + (300 if stop_file else 3)
    live_steps = 0
    with watch(live_model) as w:
        while time.monotonic() < end and not (stop_file and os.path.exists(stop_file)):
            w.log(step=live_steps, loss=train_step(live_model, optimizer, x, y))
            live_steps += 1
    return live_steps, w


@app.cell
def _(live_steps, mo, w):
    mo.md(f"live steps trained: {live_steps}, recorded: {w.view._progress['recorded']}")
    return


if __name__ == "__main__":
    app.run()
