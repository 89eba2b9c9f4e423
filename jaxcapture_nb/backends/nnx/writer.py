"""SiteWriter: the mapping ``Module.sow`` and ``Module.perturb`` write into, for one module and Variable type.

``sow(var_type, name, value)`` finds, among the Variables ``__captures__``
gives it, the one of ``var_type``, asks ``name in var`` (always False
here, so every sow arrives as its own value) and sets ``var[name]``, which
reaches :meth:`SiteWriter.__setitem__`; ``perturb`` stores zeros the same
way and reads them back at once. A writer is not a pytree, so Flax's
``Variable.get_value`` hands it over as it is.
"""

from __future__ import annotations

from typing import Any

from flax import nnx

from jaxcapture_nb.backends.nnx.callbacks import GradientTap
from jaxcapture_nb.backends.nnx.routes import Routed, Site


class SiteWriter:
    """Where one module's values of one Variable type go (see the module doc)."""

    __slots__ = ("capture", "module", "site", "stored", "var_type")

    def __init__(self, capture: Routed, site: Site, var_type: type, module: nnx.Module):
        self.capture, self.site, self.var_type, self.module = capture, site, var_type, module
        self.stored: dict[str, Any] = {}

    def __contains__(self, name: object) -> bool:
        return False

    def __getitem__(self, name: str) -> Any:
        # Only ``perturb`` reads back, right after storing zeros of the
        # value's shape, and returns ``what we return + value``.
        if self.capture.recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return GradientTap(self.capture, self.site.path, name)
        try:
            return self.stored[name]
        except KeyError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        if issubclass(self.var_type, nnx.Perturbation):
            self.stored[name] = _unwrap(value)
            if self.capture.recorder.grads:
                return  # the zeros ``perturb`` stores; the tap records the value itself
        self.capture.receive(self.site, self.var_type, name, _unwrap(value), self.module)


def _unwrap(value: Any) -> Any:
    # The default ``sow`` reduce wraps each value in a 1-tuple.
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value
