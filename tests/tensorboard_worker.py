"""A training loop under ``watch(log_dir=...)`` that test_tensorboard.py kills mid-run.

Usage: ``python tensorboard_worker.py LOG_DIR SECONDS STEP_SECONDS``. Every
step is recorded (``every=1``); once its loss is computed, and so its rows
too, the loop prints ``step <n> <time.time()>``. Each step takes at least
``STEP_SECONDS``, as a larger model's would. The loop stops by itself after
``SECONDS``, so a test that dies leaves no process behind for long.
"""

import sys
import time

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from models import Block

from jaxcapture_nb import watch


def main(log_dir: str, seconds: float, step_seconds: float) -> None:
    model = Block(16, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (32, 16))

    @nnx.jit
    def train_step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    end = time.monotonic() + seconds
    with watch(model, log_dir=log_dir, display=False) as w:
        step = 0
        while time.monotonic() < end:
            started = time.monotonic()
            loss = train_step(model, optimizer, x)
            w.log(step=step, loss=loss)
            jax.block_until_ready(loss)
            print(f"step {step} {time.time()}", flush=True)
            step += 1
            time.sleep(max(0.0, started + step_seconds - time.monotonic()))  # the rest of a long step


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]))
