"""The watched training loop the tests share, and a way to paste shared code into notebook cells.

The browser tests run their code in a notebook kernel, which cannot import
from tests/: ``source_text`` gives them the source of the same functions
and models instead, so the kernel runs what the other tests run.
"""

import inspect
import textwrap

import jax.numpy as jnp
import optax
from flax import nnx

from jaxcapture_nb import Watch, watch


@nnx.jit
def mse_train_step(model, optimizer, x, y):
    """One optimizer step on the mean squared error of ``model(x)`` against ``y``; returns the loss."""
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss


def watched_training(
    model, transform: optax.GradientTransformation, x, y, *, steps: int, after_step=None, **options
) -> Watch:
    """Trains ``model`` on ``(x, y)`` for ``steps`` steps inside ``watch(model, display=False, **options)``.

    Each step's loss is logged under the step's number.

    Args:
      model: the NNX model to train and watch.
      transform: the optax optimizer, such as ``optax.adam(1e-2)``.
      x: the inputs, the same batch every step.
      y: the targets.
      steps: how many steps to train.
      after_step: called as ``after_step(w, step)`` after each logged step, inside the watch.
      **options: more arguments for ``watch``, such as ``log_dir`` or ``every``.

    Returns:
      The finished Watch.
    """
    optimizer = nnx.Optimizer(model, transform, wrt=nnx.Param)
    with watch(model, display=False, **options) as w:
        for step in range(steps):
            w.log(step=step, loss=mse_train_step(model, optimizer, x, y))
            if after_step is not None:
                after_step(w, step)
    return w


def source_text(*definitions) -> str:
    """The source code of the given classes and functions, decorators included, for a notebook cell.

    The cell must import what the code uses (``jnp``, ``nnx``) itself.
    """
    return "\n\n".join(textwrap.dedent(inspect.getsource(d)) for d in definitions) + "\n"
