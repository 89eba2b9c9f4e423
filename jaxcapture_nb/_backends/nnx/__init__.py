"""How captures and watches hook into Flax NNX (see ``_backends/README.md``)."""

from jaxcapture_nb._backends.nnx.capture import NnxCapture

__all__ = ["NnxCapture"]
