"""How captures and watches hook into Flax NNX (see ``backends/README.md``)."""

from jaxcapture_nb.backends.nnx.capture import NnxCapture

__all__ = ["NnxCapture"]
