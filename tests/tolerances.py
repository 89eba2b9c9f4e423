"""How close a compiled float32 result must be to the same arithmetic run eagerly.

XLA fuses and reorders float32 sums, so a compiled forward pass and an eager one
agree to a few units in the last place of the largest values they sum, not to a
fixed absolute distance: on Flax 0.12 / JAX 0.12, a logit difference near 1.2
came out 1.3e-6 apart. The tolerance therefore follows the values' scale.
"""

import numpy as np

# float32 has a 1.2e-7 epsilon; a sum of a few hundred terms in another order
# moves its result by up to a few dozen units in the last place.
FLOAT32_REORDERED = 1e-5


def assert_float32_close(got, want) -> None:
    """Asserts that ``got`` equals ``want`` up to float32 sums taken in another order.

    The allowed difference is ``FLOAT32_REORDERED`` times the larger of 1 and the
    largest magnitude in ``want``, so values near zero are held to the scale of
    the terms that made them.

    >>> assert_float32_close([1.2061179], [1.2061166])
    >>> assert_float32_close([1.21], [1.2])
    Traceback (most recent call last):
    ...
    AssertionError: ...
    """
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=FLOAT32_REORDERED * scale)
