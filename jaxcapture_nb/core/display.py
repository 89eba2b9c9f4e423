"""Which view shows each kind of result, so that results never import their widgets.

A result (a capture, a comparison, a patching sweep, a watch's stream) asks
:func:`view_of` for its widget; :mod:`jaxcapture_nb.views` says, with
:func:`shows`, which widget each kind of result gets. The arrows point one
way: the views know the results, the results know only this registry.

Example:
  >>> class Tally:
  ...     count = 3
  >>> @shows(Tally)
  ... def tally_view(tally, *, unit="items"):
  ...     return f"[{tally.count} {unit}]"
  >>> view_of(Tally(), unit="rows")
  '[3 rows]'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

Maker = TypeVar("Maker", bound=Callable[..., Any])

_MAKERS: dict[type, Callable[..., Any]] = {}


def shows(kind: type) -> Callable[[Maker], Maker]:
    """Registers the decorated function as the maker of a ``kind`` result's view.

    The maker takes the result and the keyword arguments :func:`view_of`
    was given; a subclass of ``kind`` gets the same view unless it has its own.
    """

    def register(make: Maker) -> Maker:
        _MAKERS[kind] = make
        return make

    return register


def view_of(result: Any, **options: Any) -> Any:
    """The view of ``result``, made by the maker registered for its type (see :func:`shows`).

    Raises:
      LookupError: no view is registered for the result's type or its bases.
    """
    for kind in type(result).__mro__:
        make = _MAKERS.get(kind)
        if make is not None:
            return make(result, **options)
    raise LookupError(f"no view shows a {type(result).__name__}; views are registered by jaxcapture_nb.views")
