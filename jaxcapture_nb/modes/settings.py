"""View settings chosen class by class: checked, built into a view, and written as Flax code.

:class:`ViewSettings` is what a :class:`~jaxcapture_nb.ModePanel` edits: for
each module class offering view options (see
:func:`~jaxcapture_nb.view_options`), the values chosen for them. It checks a
choice against the options' kinds, builds the view with
:func:`~jaxcapture_nb.with_mode` one class at a time from the untouched
model, and writes the Flax calls that make the same view. The panel only
lays this out and forwards the browser's edits.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping
from typing import Any

from flax import linen as nn
from flax import nnx

from jaxcapture_nb.core.names import quoted
from jaxcapture_nb.core.wire import GroupMessage, OptionMessage
from jaxcapture_nb.modes.modes import (
    PRESETS,
    ModeError,
    ModuleOptions,
    ViewOption,
    batch_dims,
    preset_settings,
    view_options,
    with_mode,
)
from jaxcapture_nb.upstream.flax_internals import init_decode_cache_code

Settings = dict[str, dict[str, Any]]  # class label -> option -> value

_TAKES = {
    "bool": "True or False",
    "int": "an int",
    "float": "a number",
    "str": "a string",
    "shape": "an int or ints separated by commas",
}

LINEN_NOTE = (
    "{name} is a Linen module. Linen modules have no view options: their modes are call arguments "
    "such as train= or deterministic=. Compare them with compare_modes(module, variables, x, "
    "modes={{'train': {{'train': True}}, 'eval': {{'train': False}}}})."
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked(group: ModuleOptions, option: ViewOption, value: Any) -> Any:
    """The value as ``with_mode`` takes it (JSON lists become tuples).

    Raises:
      ModeError: a value of another kind than the option's.

    Example:
      >>> from jaxcapture_nb.modes.modes import ModuleOptions, ViewOption
      >>> size = ViewOption("batch_size", "shape", "int | Shape", "", "view")
      >>> checked(ModuleOptions(object, ("",), (size,)), size, [1, 2])
      (1, 2)
    """
    kind = option.kind
    if kind == "any" or isinstance(value, {"bool": bool, "str": str}.get(kind, ())):
        return value
    if kind in ("int", "shape") and _is_int(value):
        return value
    if kind == "float" and (_is_int(value) or isinstance(value, float)):
        return float(value)
    if kind == "shape" and isinstance(value, (list, tuple)) and value and all(map(_is_int, value)):
        return tuple(value)
    raise ModeError(
        f"{group.name}.{option.name} takes {_TAKES[kind]} ({option.annotation or kind}), got {quoted(value)}"
    )


def class_ref(cls: type) -> str:
    """How the generated code names a class: ``nnx.Dropout`` for Flax's, the bare name otherwise.

    Example:
      >>> class_ref(nnx.Dropout)
      'nnx.Dropout'
    """
    return f"nnx.{cls.__name__}" if getattr(nnx, cls.__name__, None) is cls else cls.__qualname__


def labelled(groups: list[ModuleOptions]) -> dict[str, ModuleOptions]:
    """Groups by class name; by module and name where two classes share a name."""
    counts = collections.Counter(g.name for g in groups)
    return {g.name if counts[g.name] == 1 else f"{g.cls.__module__}.{g.name}": g for g in groups}


def group_json(label: str, group: ModuleOptions) -> GroupMessage:
    """One class's options as the browser draws its card (JSON: no NaN or Inf)."""

    def current(value: Any) -> Any:
        return None if isinstance(value, float) and not math.isfinite(value) else value

    return {
        "name": label,
        "ref": class_ref(group.cls),
        "paths": list(group.paths),
        "options": [
            OptionMessage(
                name=o.name,
                kind=o.kind,
                annotation=o.annotation,
                doc=o.doc,
                via=o.via,
                current=current(o.current),
                current_text=repr(o.current),
            )
            for o in group.options
        ],
    }


def as_json(settings: Mapping[str, Mapping[str, Any]]) -> Settings:
    """Settings as the browser holds them: JSON, so shapes are lists.

    Example:
      >>> as_json({"MultiHeadAttention": {"batch_size": (1, 2)}})
      {'MultiHeadAttention': {'batch_size': [1, 2]}}
    """
    return {c: {k: list(v) if isinstance(v, tuple) else v for k, v in o.items()} for c, o in settings.items()}


def view_label(settings: Settings) -> str:
    """How comparisons name the view of ``settings``: ``current view (Dropout.deterministic=True)``.

    Example:
      >>> view_label({}), view_label({"Dropout": {"deterministic": True}})
      ('current view (nothing set)', 'current view (Dropout.deterministic=True)')
    """
    chosen = [f"{c}.{k}={v!r}" for c, options in settings.items() for k, v in options.items()]
    return f"current view ({', '.join(chosen) or 'nothing set'})"


class ViewSettings:
    """The view options a model offers, grouped by class, and what each choice of them makes.

    Args:
      model: an NNX module; a Linen module has no view options, and
        :attr:`linen_note` says where its modes are.

    Attributes:
      original: the model, never changed.
      groups: class label to :class:`~jaxcapture_nb.modes.modes.ModuleOptions`,
        in the order the panel shows them.
      linen_note: for a Linen module, why it has no options ("" otherwise).

    Example:
      >>> from flax import nnx
      >>> options = ViewSettings(nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(0))))
      >>> settings = options.normalized({"Dropout": {"deterministic": True}})
      >>> options.build(settings).layers[0].deterministic
      True
      >>> options.code(settings)
      'view = nnx.view(model, only=nnx.Dropout, deterministic=True)'
    """

    def __init__(self, model: Any):
        self.original = model
        if isinstance(model, nn.Module):
            self.linen_note = LINEN_NOTE.format(name=type(model).__name__)
            self.groups: dict[str, ModuleOptions] = {}
        else:
            self.linen_note = ""
            self.groups = labelled(view_options(model))  # TypeError if not a module

    def groups_json(self) -> list[dict[str, Any]]:
        """Every class's card, as the browser draws them."""
        return [group_json(label, g) for label, g in self.groups.items()]

    def preset_values(self, name: str, current: Settings) -> Settings:
        """``current`` with a preset's values set on every class offering them; ``"reset"`` clears all.

        Raises:
          ModeError: an unknown preset.
        """
        if name == "reset":
            return {}
        if name not in PRESETS:
            raise ModeError(f"unknown preset {quoted(name)}: use 'train', 'eval' or 'reset'")
        values = {c: dict(o) for c, o in current.items()}
        for label, group in self.groups.items():
            preset = preset_settings(name, {o.name for o in group.options})
            if preset:
                values.setdefault(label, {}).update(preset)
        return values

    def normalized(self, values: Any) -> Settings:
        """The settings ``values`` stand for: checked, unset ones dropped, in the options' order.

        Raises:
          ModeError: an unknown class or option, or a value of the wrong kind.
        """
        if self.linen_note and values:
            raise ModeError(self.linen_note)
        if not isinstance(values, Mapping):
            raise ModeError(f"settings are a dict of class name to options, got {type(values).__name__}")
        settings = {}
        for class_name, chosen in values.items():
            group = self.groups.get(class_name)
            if group is None:
                raise ModeError(
                    f"{quoted(class_name)} is not a module class of this model with view options "
                    f"(it has: {', '.join(self.groups) or 'none'})"
                )
            if not isinstance(chosen, Mapping):
                raise ModeError(f"the options of {class_name} are a dict, got {quoted(chosen)}")
            offered = [o.name for o in group.options]
            unknown = [name for name in chosen if name not in offered]
            if unknown:
                raise ModeError(
                    f"{class_name} has no option {quoted(unknown[0])} (it has: {', '.join(offered)})"
                )
            # In signature order, so the code shown reads like set_view's signature.
            values_checked = {
                o.name: checked(group, o, chosen[o.name])
                for o in group.options
                if chosen.get(o.name) is not None
            }
            if values_checked:
                settings[class_name] = values_checked
        # In the panel's order of classes, as the cards, the code and the view's label show them.
        return {name: settings[name] for name in self.groups if name in settings}

    def build(self, settings: Settings) -> Any:
        """The view of normalized ``settings``, made one class at a time from the original.

        Raises:
          ModeError: a combination the model cannot take.
        """
        view = self.original
        for name, group in self.groups.items():
            if name in settings:
                view = with_mode(view, settings[name], only=group.cls)
        return nnx.view(view) if view is self.original and not self.linen_note else view

    def code(self, settings: Settings) -> str:
        """The Flax calls that make the view of ``settings`` from ``model`` (called ``view``)."""
        if self.linen_note:
            return ""
        lines, source = [], "model"
        for name, group in self.groups.items():
            chosen = settings.get(name)
            if not chosen:
                continue
            function = "view" if group.options[0].via == "view" else "with_attributes"
            arguments = ", ".join(f"{k}={v!r}" for k, v in chosen.items())
            lines.append(f"view = nnx.{function}({source}, only={class_ref(group.cls)}, {arguments})")
            source = "view"
            lines += self._cache_lines(group, chosen)
        return "\n".join(lines) or "view = nnx.view(model)"

    def _cache_lines(self, group: ModuleOptions, chosen: Mapping[str, Any]) -> list[str]:
        # with_mode builds the decode cache set_view skips when the attribute
        # already exists (MultiHeadAttention keeps cached_key=None): say so.
        if chosen.get("decode") is not True or not hasattr(group.cls, "init_cache"):
            return []
        batch, length = chosen.get("batch_size"), chosen.get("max_length")
        if batch is None or length is None:
            return []
        modules = [m for _, m in nnx.iter_modules(self.original) if type(m) is group.cls]
        typed = any(getattr(m, "dtype", None) is not None for m in modules)
        return [
            "for _, m in nnx.iter_modules(view):  # set_view leaves an existing empty cache as it is",
            f"    if isinstance(m, {class_ref(group.cls)}):",
            f"        {init_decode_cache_code('m', batch_dims(batch), length, typed)}",
        ]

    def rows(self, settings: Settings) -> list[tuple[str, str, Any, str, bool]]:
        """Every option in order: class label, option, value in the view, how it is set, set here."""
        rows = []
        for name, group in self.groups.items():
            chosen = settings.get(name, {})
            for o in group.options:
                rows.append((name, o.name, chosen.get(o.name, o.current), o.via, o.name in chosen))
        return rows
