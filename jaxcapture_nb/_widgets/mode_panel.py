"""ModePanel: switches for the train/eval options of an NNX model (anywidget; JS in js/).

The panel lists what :func:`~jaxcapture_nb.view_options` finds, one card per
module class. The browser only edits the chosen values; the kernel checks
them, builds the view with :func:`~jaxcapture_nb.with_mode` one class at a
time from the untouched model, and sends back the equivalent Flax code. A
combination Flax cannot take is refused with a message saying what it
needs, and the switches go back to what ``panel.model`` is: the controls
always show the view the kernel holds.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Mapping
from typing import Any

import anywidget
import ipywidgets
import traitlets as t
from flax import linen as nn
from flax import nnx

from jaxcapture_nb._modes import (
    PRESETS,
    ModeError,
    ModuleOptions,
    ViewOption,
    batch_dims,
    preset_settings,
    view_options,
    with_mode,
)
from jaxcapture_nb._widgets.front_end import module, stylesheet
from jaxcapture_nb._widgets.mode_static import OptionRow, panel_html, panel_text
from jaxcapture_nb._widgets.static import with_fallback

_TAKES = {
    "bool": "True or False",
    "int": "an int",
    "float": "a number",
    "str": "a string",
    "shape": "an int or ints separated by commas",
}

_LINEN_NOTE = (
    "{name} is a Linen module. Linen modules have no view options: their modes are call arguments "
    "such as train= or deterministic=. Compare them with compare_modes(module, variables, x, "
    "modes={{'train': {{'train': True}}, 'eval': {{'train': False}}}})."
)


class _ModeControls(anywidget.AnyWidget):
    """The panel's controls; every trait is written by the kernel except ``_values``."""

    _esm = module("mode_panel.js")
    _css = stylesheet("mode_panel.css")

    _groups = t.List(t.Dict()).tag(sync=True)
    _values = t.Dict().tag(sync=True)  # class name -> option -> value, as the browser shows them
    _error = t.Unicode("").tag(sync=True)
    _code = t.Unicode("").tag(sync=True)
    _revision = t.Int(0).tag(sync=True)  # bumped each time the kernel has applied _values
    _can_compare = t.Bool(False).tag(sync=True)
    _compared = t.Unicode("").tag(sync=True)  # what the comparison shown compares ("" before one)
    _stale = t.Bool(False).tag(sync=True)  # the settings changed since that comparison
    _busy = t.Bool(False).tag(sync=True)
    _linen = t.Unicode("").tag(sync=True)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked(group: ModuleOptions, option: ViewOption, value: Any) -> Any:
    """The value as ``with_mode`` takes it (JSON lists become tuples), or a ModeError."""
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
        f"{group.name}.{option.name} takes {_TAKES[kind]} ({option.annotation or kind}), got {value!r}"
    )


def _class_ref(cls: type) -> str:
    """How the generated code names a class: ``nnx.Dropout`` for Flax's, the bare name otherwise."""
    return f"nnx.{cls.__name__}" if getattr(nnx, cls.__name__, None) is cls else cls.__qualname__


def _labelled(groups: list[ModuleOptions]) -> dict[str, ModuleOptions]:
    """Groups by class name; by module and name where two classes share a name."""
    counts = collections.Counter(g.name for g in groups)
    return {g.name if counts[g.name] == 1 else f"{g.cls.__module__}.{g.name}": g for g in groups}


def _group_json(label: str, group: ModuleOptions) -> dict[str, Any]:
    def current(value: Any) -> Any:
        return None if isinstance(value, float) and not math.isfinite(value) else value

    return {
        "name": label,
        "ref": _class_ref(group.cls),
        "paths": list(group.paths),
        "options": [
            {
                **{f: getattr(o, f) for f in ("name", "kind", "annotation", "doc", "via")},
                "current": current(o.current),
                "current_text": repr(o.current),
            }
            for o in group.options
        ],
    }


class ModePanel(ipywidgets.VBox):
    """Train/eval switches for an NNX model, and what switching them changes.

    Made by :func:`mode_panel`. Its first child holds the switches; after a
    comparison has run, the second shows the comparison's widget, marked
    stale once the settings change.

    Attributes:
      original: the model, never changed by the panel.
      comparison: what the compare function last returned (None before).
    """

    def __init__(
        self,
        model: Any,
        *,
        compare: Callable[[Any], Any] | None = None,
        inputs: tuple[Any, ...] | None = None,
        **kwargs: Any,
    ):
        if compare is not None and inputs is not None:
            raise TypeError(
                "give compare= or inputs=, not both: inputs= compares the view with the model as it is"
            )
        self.original = model
        self._linen = _LINEN_NOTE.format(name=type(model).__name__) if isinstance(model, nn.Module) else ""
        self.comparison: Any = None
        self._compare_fn: Callable[[Any], Any] | None = None
        self._compare_labels = False  # whether the compare function is the panel's own, view against model
        self._compared_settings: dict[str, dict[str, Any]] | None = None
        self._settings: dict[str, dict[str, Any]] = {}
        self._mode_error = self._compare_error = ""
        self._quiet = False
        self._shown: ipywidgets.Widget | None = None  # the comparison widget the panel made
        if self._linen:
            self._groups: dict[str, ModuleOptions] = {}
            self._view = model
            controls = _ModeControls(_linen=self._linen)
        else:
            self._groups = _labelled(view_options(model))  # TypeError if not a module
            self._view = nnx.view(model)
            controls = _ModeControls(_groups=[_group_json(label, g) for label, g in self._groups.items()])
        self._controls = controls
        controls._code = self._code_text()
        controls.observe(self._on_values, "_values")
        controls.on_msg(self._on_message)
        super().__init__(children=(controls,), **kwargs)
        if compare is not None:
            self.on_compare(compare)
        if inputs is not None:
            self.on_compare(self._against_the_model(tuple(inputs)))
            self._compare_labels = True

    @property
    def model(self) -> Any:
        """The view the panel's settings make: a module tree sharing the original's Variables.

        With nothing set it is ``nnx.view(original)``, never the original
        itself. It is built when the settings change, so calling it keeps its
        own state (e.g. a decode cache) between calls. For a Linen module it
        is the module.
        """
        return self._view

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        """The values set in the panel, by class name and option, behind ``model``."""
        return {name: dict(options) for name, options in self._settings.items()}

    @property
    def error(self) -> str:
        """The text the panel's error box shows ("" when there is none)."""
        return self._controls._error

    def set(self, class_name: str, **options: Any) -> None:
        """Sets options of one module class, as the switches do; None clears one.

        The options are merged into what the panel shows, so
        ``set("MultiHeadAttention", batch_size=1, max_length=32)`` completes a
        ``decode`` switched on in the browser.

        Raises:
          ModeError: an unknown class or option, a value of the wrong kind,
            or a combination the model cannot take; nothing changes then.
        """
        values = self._shown_values()
        values[class_name] = {**values.get(class_name, {}), **options}
        self._apply(values, strict=True)

    def preset(self, name: str) -> None:
        """``"train"`` or ``"eval"`` sets their values on every class offering them; ``"reset"`` clears all.

        Raises:
          ModeError: an unknown preset, or a combination the model cannot take.
        """
        self._apply(self._preset_values(name), strict=True)

    def on_compare(self, fn: Callable[[Any], Any]) -> None:
        """Registers ``fn(view) -> result`` for the Compare button; ``result.show()`` is displayed.

        ``mode_panel(model, inputs=(x,))`` registers the usual one: the
        current view against the model as it is, on ``x``.
        """
        self._compare_fn = fn
        self._compare_labels = False
        self._controls._can_compare = True

    def view_label(self) -> str:
        """How comparisons name the current view: ``current view (Dropout.deterministic=True)``.

        Example:
          >>> from flax import nnx
          >>> panel = mode_panel(nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(0))))
          >>> panel.view_label()
          'current view (nothing set)'
          >>> panel.set("Dropout", deterministic=True)
          >>> panel.view_label()
          'current view (Dropout.deterministic=True)'
        """
        chosen = [f"{c}.{k}={v!r}" for c, options in self._settings.items() for k, v in options.items()]
        return f"current view ({', '.join(chosen) or 'nothing set'})"

    def _against_the_model(self, inputs: tuple[Any, ...]) -> Callable[[Any], Any]:
        from jaxcapture_nb._compare import compare_modes

        def compare(view: Any) -> Any:
            return compare_modes(
                self.original, *inputs, modes={"model as it is": {}, self.view_label(): view}
            )

        return compare

    def compare(self) -> Any:
        """Runs the compare function on the current view and shows its result; errors are raised."""
        if self._compare_fn is None:
            raise ValueError("no compare function: pass compare= to mode_panel or call on_compare(fn)")
        controls = self._controls
        controls._busy = True
        self._compare_error = ""
        controls._error = self._error_text()
        try:
            result = self._compare_fn(self.model)
            widget = result if isinstance(result, ipywidgets.Widget) else result.show()
        finally:
            controls._busy = False
        if self._shown is not None and self._shown is not widget:
            self._shown.close()
        self._shown = None if widget is result else widget
        self.comparison = result
        self._compared_settings = self.settings
        with controls.hold_sync():
            controls._compared = (
                f"model as it is against {self.view_label()}"
                if self._compare_labels
                else f"your compare function on {self.view_label()}"
            )
            controls._stale = False
        self.children = (controls, widget)
        return result

    def _shown_values(self) -> dict[str, dict[str, Any]]:
        """A copy of the values the panel shows: those behind ``model``."""
        return {c: dict(o) for c, o in self._settings.items()}

    def _preset_values(self, name: str) -> dict[str, dict[str, Any]]:
        if name == "reset":
            return {}
        if name not in PRESETS:
            raise ModeError(f"unknown preset {name!r}: use 'train', 'eval' or 'reset'")
        values = self._shown_values()
        for label, group in self._groups.items():
            offered = {o.name for o in group.options}
            preset = preset_settings(name, offered)
            if preset:
                values.setdefault(label, {}).update(preset)
        return values

    def _normalized(self, values: Any) -> dict[str, dict[str, Any]]:
        if self._linen and values:
            raise ModeError(self._linen)
        if not isinstance(values, Mapping):
            raise ModeError(f"settings are a dict of class name to options, got {type(values).__name__}")
        settings = {}
        for class_name, chosen in values.items():
            group = self._groups.get(class_name)
            if group is None:
                raise ModeError(
                    f"{class_name!r} is not a module class of this model with view options "
                    f"(it has: {', '.join(self._groups) or 'none'})"
                )
            if not isinstance(chosen, Mapping):
                raise ModeError(f"the options of {class_name} are a dict, got {chosen!r}")
            offered = [o.name for o in group.options]
            unknown = [name for name in chosen if name not in offered]
            if unknown:
                raise ModeError(f"{class_name} has no option {unknown[0]!r} (it has: {', '.join(offered)})")
            # In signature order, so the code shown reads like set_view's signature.
            checked = {
                o.name: _checked(group, o, chosen[o.name])
                for o in group.options
                if chosen.get(o.name) is not None
            }
            if checked:
                settings[class_name] = checked
        return settings

    def _build(self, settings: dict[str, dict[str, Any]]) -> Any:
        view = self.original
        for name, group in self._groups.items():
            if name in settings:
                view = with_mode(view, settings[name], only=group.cls)
        return nnx.view(view) if view is self.original and not self._linen else view

    def _apply(self, values: Any, *, strict: bool) -> None:
        """Builds the view of ``values``; a failure raises (``strict``) or is shown, keeping the last view."""
        try:
            settings = self._normalized(values)
            view = self._build(settings)
        except ModeError as e:
            if strict:
                raise
            self._mode_error = (
                f"not applied: {str(e).rstrip('.')}. The switches show panel.model as it still is."
            )
        else:
            self._settings, self._view, self._mode_error = settings, view, ""
        controls = self._controls
        with controls.hold_sync():
            self._quiet = True  # this write is the kernel's own, not a new choice to apply
            try:
                # What panel.model is, also after a refused change: the
                # browser redraws every control from it.
                controls._values = _as_json(self._settings)
            finally:
                self._quiet = False
            controls._code = self._code_text()
            controls._error = self._error_text()
            controls._stale = (
                self._compared_settings is not None and self._compared_settings != self._settings
            )
            controls._revision += 1

    def _on_values(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._apply(change["new"], strict=False)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        action = content.get("action") if isinstance(content, Mapping) else None
        if action == "compare":
            try:
                self.compare()
            except Exception as e:  # whatever the user's function raises belongs in the error box
                self._compare_error = (
                    f"compare failed: {type(e).__name__}: {e} (run panel.compare() for the traceback)"
                )
                self._controls._error = self._error_text()
            return
        try:
            values = self._preset_values(action)
        except ModeError as e:
            self._mode_error = str(e)
            self._controls._error = self._error_text()
            return
        self._apply(values, strict=False)

    def _error_text(self) -> str:
        return "\n".join(e for e in (self._mode_error, self._compare_error) if e)

    def _code_text(self) -> str:
        """The Flax calls that make ``model`` from ``original`` (called ``model`` and ``view`` here)."""
        if self._linen:
            return ""
        lines, source = [], "model"
        for name, group in self._groups.items():
            chosen = self._settings.get(name)
            if not chosen:
                continue
            function = "view" if group.options[0].via == "view" else "with_attributes"
            arguments = ", ".join(f"{k}={v!r}" for k, v in chosen.items())
            lines.append(f"view = nnx.{function}({source}, only={_class_ref(group.cls)}, {arguments})")
            source = "view"
            lines += _cache_lines(group, chosen, self.original)
        return "\n".join(lines) or "view = nnx.view(model)"

    def _rows(self) -> list[OptionRow]:
        """Every option, in the panel's order, with its value in the current view."""
        rows = []
        for name, group in self._groups.items():
            chosen = self._settings.get(name, {})
            for o in group.options:
                value = chosen.get(o.name, o.current)
                rows.append(OptionRow(name, o.name, repr(value), o.via, o.name in chosen))
        return rows

    def __repr__(self) -> str:
        return self._static(panel_text)

    def _static(self, render: Callable[..., str]) -> str:
        title = f"ModePanel of {type(self.original).__name__}"
        return render(title, self._linen, self._rows(), self._controls._code, self.error)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        # ipywidgets returns the data dict alone, without metadata.
        data = super()._repr_mimebundle_(**kwargs)
        return with_fallback(
            None if data is None else (data, {}), self._static(panel_text), self._static(panel_html)
        )


def _as_json(settings: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Settings as the browser holds them: JSON, so shapes are lists."""
    return {c: {k: list(v) if isinstance(v, tuple) else v for k, v in o.items()} for c, o in settings.items()}


def _cache_lines(group: ModuleOptions, chosen: Mapping[str, Any], model: nnx.Module) -> list[str]:
    # with_mode builds the decode cache set_view skips when the attribute
    # already exists (MultiHeadAttention keeps cached_key=None): say so.
    if chosen.get("decode") is not True or not hasattr(group.cls, "init_cache"):
        return []
    batch, length = chosen.get("batch_size"), chosen.get("max_length")
    if batch is None or length is None:
        return []
    dtypes = {getattr(m, "dtype", None) for _, m in nnx.iter_modules(model) if type(m) is group.cls}
    dtype = ", m.dtype" if dtypes - {None} else ""
    return [
        "for _, m in nnx.iter_modules(view):  # set_view leaves an existing empty cache as it is",
        f"    if isinstance(m, {_class_ref(group.cls)}):",
        f"        m.init_cache(({', '.join(map(str, batch_dims(batch)))}, {length}, m.in_features){dtype})",
    ]


def mode_panel(
    model: Any, *, inputs: tuple[Any, ...] | None = None, compare: Callable[[Any], Any] | None = None
) -> ModePanel:
    """Switches for every train/eval option of an NNX model; ``panel.model`` is the view they make.

    Each module class offering options (see :func:`~jaxcapture_nb.view_options`)
    gets a card: a switch per boolean, a text field per other option, with the
    docs Flax gives. Presets set what ``Module.train()``/``eval()`` would. The
    panel shows the Flax code of the current view; a combination the model
    cannot take is refused, and its error box says what it needs. The model
    itself is never changed: views share its Variables.

    Args:
      model: an NNX module (a Linen module gets a note: its modes are call
        arguments).
      inputs: the inputs the Compare button runs the model on: it compares
        the current view with the model as it is (see
        :func:`~jaxcapture_nb.compare_modes`), shown below the panel.
      compare: instead of ``inputs``, your own ``compare(view) -> result``
        for the Compare button; ``result.show()`` is shown below.

    Returns:
      The :class:`ModePanel` widget.

    Raises:
      TypeError: ``model`` is not a Flax module.

    Example:
      >>> from flax import nnx
      >>> panel = mode_panel(nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(0))))
      >>> panel.set("Dropout", deterministic=True)
      >>> panel.model.layers[0].deterministic, panel.original.layers[0].deterministic
      (True, False)
      >>> print(panel)
      ModePanel of Sequential (* set in the panel)
      class    option         value   via
      Dropout  deterministic  True *  view
      <BLANKLINE>
      view = nnx.view(model, only=nnx.Dropout, deterministic=True)
    """
    return ModePanel(model, compare=compare, inputs=inputs)
