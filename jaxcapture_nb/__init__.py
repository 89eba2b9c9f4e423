"""jaxcapture_nb: see inside Flax models from a notebook.

Record every tensor a model sows with :func:`capture`, and summarize arrays
on the device with :func:`summarize`.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxcapture_nb import summarize
  >>> int(summarize(jnp.arange(6.0)).count)
  6
"""

from jaxcapture_nb._capture import Capture, capture
from jaxcapture_nb._records import Record
from jaxcapture_nb._summary import Summary, summarize
from jaxcapture_nb._warnings import JaxCaptureWarning

__version__ = "0.1.0"

__all__ = [
    "Capture",
    "JaxCaptureWarning",
    "Record",
    "Summary",
    "capture",
    "summarize",
    "__version__",
]
