"""summarize() against the one-pass floor and NumPy, on 20 tensors of 256x4096.

Targets: at most 5x the floor (stretch: 3x), at least 4x faster than NumPy.
Ratios are paired per round (see ``_timing.paired_ratios``), with a 95%
bootstrap interval.
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import paired_ratio_interval, paired_ratios, samples

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
    floor_name = "floor (jnp.sum each)"
    times = samples(
        {
            floor_name: lambda: floor(xs),
            "summarize": lambda: summarize(xs, bins=64),
            "numpy": lambda: numpy_summaries(xs),
        },
        rounds=25,
    )
    ratios = paired_ratios(times, floor_name)
    for name, seconds in times.items():
        print(f"{name:22s} {np.median(seconds) * 1e3:8.2f} ms  {ratios[name]:6.1f}x floor")
    low, high = paired_ratio_interval(times, "summarize", floor_name)
    print(f"summarize / floor: {ratios['summarize']:.2f}x [{low:.2f}, {high:.2f}] (target <= 5x, stretch 3x)")
    numpy_ratio = paired_ratios(times, "summarize")["numpy"]
    print(f"numpy / summarize: {numpy_ratio:.1f}x (target >= 4x)")


if __name__ == "__main__":
    main()
