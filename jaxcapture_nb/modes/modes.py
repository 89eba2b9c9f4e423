"""Train and eval modes of an NNX model: which options it offers, and views that set them.

Flax NNX sets modes on copies that share the weights: ``nnx.view`` calls each
module's ``set_view`` (Dropout's ``deterministic``, BatchNorm's
``use_running_average``, attention's ``decode`` and cache sizes), and
``nnx.with_attributes`` sets plain attributes. :func:`view_options` lists
what a model offers, grouped by module class; :func:`with_mode` returns the
view for a preset (``"train"``, ``"eval"``) or a dict of options, checking
the combination first, so a bad one is a :class:`ModeError` that says how to
fix it rather than a failure deep inside the next forward pass.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flax import nnx

from jaxcapture_nb.upstream import flax_check
from jaxcapture_nb.upstream.flax_internals import (
    filter_predicate,
    has_decode_cache,
    init_decode_cache,
    set_view_docs,
)

# What Module.train() and Module.eval() set on every module that has them.
PRESETS: dict[str, dict[str, bool]] = {
    "train": {"deterministic": False, "use_running_average": False},
    "eval": {"deterministic": True, "use_running_average": True},
}

# Attribute names that mean "mode" on a user module without set_view. Only
# boolean instance attributes with these names are offered as toggles, so a
# switch never lands on a structural flag such as use_bias.
MODE_ATTRIBUTES = ("deterministic", "use_running_average", "decode", "training", "is_training")

_SKIPPED_PARAMETERS = {"self", "args", "kwargs"}


class ModeError(ValueError):
    """A mode the model cannot take: an unknown option or an invalid combination."""


@dataclasses.dataclass(frozen=True)
class ViewOption:
    """One option a module class offers for its modes.

    Attributes:
      name: the keyword, e.g. ``"deterministic"``.
      kind: how to enter it: ``"bool"``, ``"int"``, ``"float"``, ``"str"``,
        ``"shape"`` (an int or a tuple of ints) or ``"any"``.
      annotation: the type as written in ``set_view``'s signature.
      doc: its description from ``set_view``'s docstring ("" if it has none).
      via: ``"view"`` when ``nnx.view`` sets it through ``set_view``,
        ``"attribute"`` when ``nnx.with_attributes`` sets a plain attribute.
      current: its value on the model (the first module of the class), or
        None when it is not an attribute (e.g. cache sizes).
    """

    name: str
    kind: str
    annotation: str
    doc: str
    via: str
    current: Any = None


@dataclasses.dataclass(frozen=True)
class ModuleOptions:
    """The options one module class offers, and where its modules sit.

    Attributes:
      cls: the module class.
      paths: dotted paths of the model's modules of this class ("" for the root).
      options: the options, in signature order.
    """

    cls: type
    paths: tuple[str, ...]
    options: tuple[ViewOption, ...]

    @property
    def name(self) -> str:
        """The class name, as ``nnx.view_info`` prints it."""
        return self.cls.__qualname__


def _kind(annotation: str) -> str:
    words = set(re.findall(r"\w+", annotation))
    if "bool" in words:
        return "bool"
    if words & {"Shape", "tuple", "Sequence"}:
        return "shape"
    for kind in ("int", "float", "str"):
        if kind in words:
            return kind
    return "any"


def _annotation_text(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _simple(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else None


def _set_view_options(model: nnx.Module, cls: type, first: nnx.Module) -> tuple[ViewOption, ...]:
    docs = set_view_docs(model, cls)
    options = []
    for name, parameter in inspect.signature(cls.set_view).parameters.items():
        if name in _SKIPPED_PARAMETERS or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = _annotation_text(parameter)
        options.append(
            ViewOption(
                name=name,
                kind=_kind(annotation),
                annotation=annotation,
                doc=docs.get(name, ""),
                via="view",
                current=_simple(vars(first).get(name)),
            )
        )
    return tuple(options)


def _attribute_options(first: nnx.Module) -> tuple[ViewOption, ...]:
    return tuple(
        ViewOption(
            name=name, kind="bool", annotation="bool", doc="", via="attribute", current=vars(first)[name]
        )
        for name in MODE_ATTRIBUTES
        if isinstance(vars(first).get(name), bool)
    )


def view_options(model: nnx.Module) -> list[ModuleOptions]:
    """Every mode option the model's modules offer, grouped by module class.

    Modules with ``set_view`` offer its keyword arguments, described from its
    docstring as ``nnx.view_info`` reads it, or from the signature alone when
    the docstring lacks an entry. Modules without ``set_view`` offer their
    boolean attributes named like modes (``deterministic``,
    ``use_running_average``, ``decode``, ``training``, ``is_training``), set
    through ``nnx.with_attributes``.

    Args:
      model: an NNX module.

    Returns:
      One :class:`ModuleOptions` per class that offers anything, sorted by
      class name.

    Raises:
      TypeError: ``model`` is not an NNX module.

    Example:
      >>> from flax import nnx
      >>> class Net(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.drop = nnx.Dropout(0.5, rngs=rngs)
      ...         self.norm = nnx.BatchNorm(3, rngs=rngs)
      >>> [(g.name, [o.name for o in g.options]) for g in view_options(Net(nnx.Rngs(0)))]
      [('BatchNorm', ['use_running_average']), ('Dropout', ['deterministic'])]
    """
    if not isinstance(model, nnx.Module):
        raise TypeError(
            f"view options belong to flax.nnx modules, got {type(model).__name__}; Linen modules take "
            "their modes as call arguments (train=, deterministic=), not as module state"
        )
    flax_check.check()
    paths: dict[type, list[str]] = {}
    first: dict[type, nnx.Module] = {}
    for path, module in nnx.iter_modules(model):
        paths.setdefault(type(module), []).append(".".join(str(p) for p in path))
        first.setdefault(type(module), module)
    groups = []
    for cls in sorted(paths, key=lambda c: c.__qualname__):
        if hasattr(cls, "set_view"):
            options = _set_view_options(model, cls, first[cls])
        else:
            options = _attribute_options(first[cls])
        if options:
            groups.append(ModuleOptions(cls=cls, paths=tuple(sorted(paths[cls])), options=options))
    return groups


Mode = str | Mapping[str, Any]


def mode_label(mode: Mode) -> str:
    """A short name for a mode: the preset's name, or its options written out.

    Example:
      >>> mode_label("eval"), mode_label({"deterministic": True, "decode": False}), mode_label({})
      ('eval', 'deterministic=True, decode=False', 'as is')
    """
    if isinstance(mode, str):
        return mode
    if not mode:
        return "as is"
    return ", ".join(f"{k}={v!r}" for k, v in mode.items())


def _scoped(only: Any, needs_set_view: bool) -> Callable[[Any, Any], bool]:
    in_scope = filter_predicate(only)
    return lambda path, node: hasattr(node, "set_view") == needs_set_view and in_scope(path, node)


def preset_settings(preset: str, offered: set[str]) -> dict[str, bool]:
    """What a preset sets among the ``offered`` options.

    Like ``Module.train()``/``eval()``, it sets what the modules have and skips the rest.

    Example:
      >>> preset_settings("eval", {"deterministic", "decode"})
      {'deterministic': True}
    """
    return {k: v for k, v in PRESETS[preset].items() if k in offered}


def batch_dims(batch_size: int | Sequence[int]) -> tuple[int, ...]:
    """The leading cache dimensions a ``batch_size`` option stands for.

    Example:
      >>> batch_dims(2), batch_dims([1, 2])
      ((2,), (1, 2))
    """
    return (batch_size,) if isinstance(batch_size, int) else tuple(batch_size)


def _resolve(mode: Mode, groups: Sequence[ModuleOptions]) -> dict[str, Any]:
    offered = {o.name for g in groups for o in g.options}
    if isinstance(mode, str):
        if mode not in PRESETS:
            raise ModeError(
                f"unknown mode {mode!r}: use 'train', 'eval', or a dict of options such as {{'deterministic': True}}"
            )
        return preset_settings(mode, offered)
    if not isinstance(mode, Mapping):
        raise ModeError(f"a mode is 'train', 'eval' or a dict of view options, got {type(mode).__name__}")
    unknown = sorted(set(mode) - offered)
    if unknown:
        listing = ", ".join(sorted(offered)) or "none"
        names = ", ".join(map(repr, unknown))
        verb = "is not an option" if len(unknown) == 1 else "are not options"
        raise ModeError(
            f"{names} {verb} of the modules set (they offer: {listing}); "
            "see jaxcapture_nb.view_options(model)"
        )
    return dict(mode)


def _check_caches(view: nnx.Module, settings: Mapping[str, Any], only: Any) -> None:
    """Makes the decode caches a mode with ``decode=True`` asks for, or says what is missing."""
    if settings.get("decode") is not True:
        return
    batch_size, max_length = settings.get("batch_size"), settings.get("max_length")
    sized = batch_size is not None and max_length is not None
    in_scope = filter_predicate(only)
    for path, module in nnx.iter_modules(view):
        if not (getattr(module, "decode", False) is True and hasattr(module, "init_cache")):
            continue
        if not in_scope(path, module):
            continue
        if has_decode_cache(module) and not sized:
            continue  # the cache it has will do
        where = ".".join(str(p) for p in path) or "the model"
        if not sized:
            raise ModeError(
                f"decode=True needs a cache, and {type(module).__name__} at {where} has none: also give "
                "batch_size= and max_length= (e.g. decode=True, batch_size=1, max_length=32), or call "
                "init_cache on the model first"
            )
        # set_view only builds the cache when the attribute is missing, but
        # MultiHeadAttention always has it (as None), and sizes given anew
        # mean a new cache: build it on the view, where the model keeps its own.
        init_decode_cache(module, batch_dims(batch_size), max_length)


def with_mode(model: nnx.Module, mode: Mode, *, only: Any = None) -> nnx.Module:
    """A view of ``model`` in a mode, sharing its weights; ``model`` is not changed.

    Options of modules with ``set_view`` go through ``nnx.view``, attribute
    toggles of other modules through ``nnx.with_attributes``.

    Args:
      model: an NNX module.
      mode: ``"train"`` or ``"eval"`` (what ``Module.train()`` /
        ``Module.eval()`` would set), or a dict of options, e.g.
        ``{"deterministic": True, "use_running_average": False}``.
      only: an ``nnx`` filter (e.g. a module class) limiting the modules set.

    Returns:
      The view: a new module tree whose Variables are the model's own.

    Raises:
      ModeError: an unknown preset or option, or an invalid combination
        (e.g. ``decode=True`` without the cache sizes).

    Example:
      >>> from flax import nnx
      >>> model = nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
      >>> with_mode(model, "eval").layers[0].deterministic, model.layers[0].deterministic
      (True, False)
    """
    groups = view_options(model)
    if only is not None:
        in_scope = filter_predicate(only)
        classes = {type(m) for path, m in nnx.iter_modules(model) if in_scope(path, m)}
        groups = [g for g in groups if g.cls in classes]
    settings = _resolve(mode, groups)
    by_view = {o.name for g in groups for o in g.options if o.via == "view"}
    by_attribute = {o.name for g in groups for o in g.options if o.via == "attribute"}
    view_settings = {k: v for k, v in settings.items() if k in by_view}
    attribute_settings = {k: v for k, v in settings.items() if k in by_attribute}
    try:
        view = nnx.view(model, only=_scoped(only, True), raise_if_not_found=False, **view_settings)
        if attribute_settings:
            view = nnx.with_attributes(
                view, only=_scoped(only, False), raise_if_not_found=False, **attribute_settings
            )
        _check_caches(view, settings, only)
    except ModeError:
        raise
    except (TypeError, ValueError) as e:
        raise ModeError(f"{type(model).__name__} cannot take the mode {mode_label(mode)}: {e}") from None
    return view
