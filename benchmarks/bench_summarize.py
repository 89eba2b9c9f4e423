"""summarize() against the one-pass floor and NumPy, on 20 tensors of 256x4096.

Targets: at most 12x the floor (stretch: 5x), at least 4x faster than NumPy.
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import compare

from jaxcapture_nb import summarize


@jax.jit
def floor(xs):
    return [jnp.sum(x) for x in xs]


def numpy_summaries(xs):
    out = []
    for x in xs:
        a = np.asarray(x)
        finite = a[np.isfinite(a)]
        out.append(
            (
                np.histogram(finite, bins=64),
                finite.min(),
                finite.max(),
                finite.mean(),
                finite.std(),
                np.isnan(a).sum(),
            )
        )
    return out


def main():
    xs = [jax.random.normal(jax.random.key(i), (256, 4096), jnp.float32) for i in range(20)]
    times = compare(
        {
            "floor (jnp.sum each)": lambda: floor(xs),
            "summarize": lambda: summarize(xs, bins=64),
            "numpy": lambda: numpy_summaries(xs),
        }
    )
    base = times["floor (jnp.sum each)"]
    for name, seconds in times.items():
        print(f"{name:22s} {seconds * 1e3:8.2f} ms  {seconds / base:6.1f}x floor")
    print(f"summarize / floor: {times['summarize'] / base:.1f}x (target <= 12x, stretch 5x)")
    print(f"numpy / summarize: {times['numpy'] / times['summarize']:.1f}x (target >= 4x)")


if __name__ == "__main__":
    main()
