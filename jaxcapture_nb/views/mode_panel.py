"""ModePanel: switches for the train/eval options of an NNX model (anywidget; JS in js/).

The panel lists what :func:`~jaxcapture_nb.view_options` finds, one card per
module class. The browser only edits the chosen values; the kernel checks
them, builds the view with :func:`~jaxcapture_nb.with_mode` one class at a
time from the untouched model, and sends back the equivalent Flax code. A
combination Flax cannot take is refused with a message saying what it
needs, and the switches go back to what ``panel.model`` is: the controls
always show the view the kernel holds.

The panel is one anywidget, so hosts that display only anywidgets (marimo)
show it whole. Its Compare button fills the panel's own ``_compare_*``
traits, drawn in the browser by the same code as
:class:`~jaxcapture_nb.CompareView` (js/compare_draw.js): no widget is made
while a browser message is handled.

What the panel leaves in a saved notebook, and when it sends that again, is
:mod:`jaxcapture_nb.views.mode_picture`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import traitlets as t

from jaxcapture_nb.modes.compare import compare_modes
from jaxcapture_nb.modes.comparison import Comparison
from jaxcapture_nb.modes.modes import ModeError
from jaxcapture_nb.modes.settings import ViewSettings, as_json, view_label
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.compare_view import comparison_state, comparison_traits
from jaxcapture_nb.views.mode_picture import PanelPicture, comparison_of

# What Compare can put the current view against, when the panel runs the
# comparison on inputs=: the model as it is, or its train and eval presets.
AGAINST = ("model", "presets")


class ModePanel(
    PanelPicture,
    FrontEndWidget,
    comparison_traits("_compare"),
    entry="mode_panel.js",
    css=("compare_view.css", "mode_panel.css"),
):
    """Train/eval switches for an NNX model, and what switching them changes.

    Made by :func:`mode_panel`. One widget: the switches, the Flax code of
    the view they make, and, once Compare has run, the comparison, marked
    stale when the switches move after it. The comparison shown is held in
    CompareView's traits under the ``_compare`` prefix (``_compare_modes``
    and so on; see :func:`~jaxcapture_nb.views.compare_view.comparison_traits`).

    Attributes:
      original: the model, never changed by the panel.
      comparison: what the compare function last returned (None before).
    """

    # Every trait is written by the kernel except _values and _against.
    _groups = t.List(t.Dict()).tag(sync=True)
    _values = t.Dict().tag(sync=True)  # class name -> option -> value, as the browser shows them
    _error = t.Unicode("").tag(sync=True)
    _code = t.Unicode("").tag(sync=True)
    _revision = t.Int(0).tag(sync=True)  # bumped each time the kernel has applied _values
    _can_compare = t.Bool(False).tag(sync=True)
    _against = t.Unicode("").tag(sync=True)  # one of AGAINST; "" without inputs=
    _compared = t.Unicode("").tag(sync=True)  # what the comparison shown compares ("" before one)
    _stale = t.Bool(False).tag(sync=True)  # the settings changed since that comparison
    _busy = t.Bool(False).tag(sync=True)
    _linen = t.Unicode("").tag(sync=True)
    # The panel's name across its views: the display id it shows itself under,
    # and the key under which the browser keeps what the reader left in a view
    # (the open site, the focus) for the next view of the same panel.
    _panel_id = t.Unicode().tag(sync=True)

    def __init__(
        self,
        model: Any,
        *,
        compare: Callable[[Any], Any] | None = None,
        inputs: tuple[Any, ...] | None = None,
        against: str = "model",
        **kwargs: Any,
    ):
        if compare is not None and inputs is not None:
            raise TypeError(
                "give compare= or inputs=, not both: inputs= compares the view with the model as it is"
            )
        if inputs is not None and not isinstance(inputs, (tuple, list)):
            raise TypeError(
                f"inputs= takes the model's positional inputs as a tuple, e.g. inputs=(x,); "
                f"got a {type(inputs).__name__}"
            )
        if inputs is None and against != "model":
            raise ValueError(
                f"against={against!r} applies to the comparison on inputs=: pass inputs=(x,) too"
            )
        options = ViewSettings(model)  # TypeError if not a module
        linen = options.linen_note
        if linen and inputs is not None:
            raise TypeError(
                f"inputs= compares views, and {type(model).__name__} is a Linen module without them: "
                "use compare_modes(module, variables, x, modes=...) with its call arguments"
            )
        self.original = model
        self.comparison: Any = None
        self._compare_fn: Callable[[Any], Any] | None = None
        self._compared_with: tuple[dict[str, dict[str, Any]], str] | None = None  # settings, against
        self._settings: dict[str, dict[str, Any]] = {}
        self._mode_error = self._compare_failure = ""
        self._quiet = False
        self._inputs: tuple[Any, ...] | None = None  # what the panel's own comparison runs on
        self._options = options
        self._view = options.build({})
        # The picture last sent to the panel's display (None until it is displayed).
        self._picture: tuple[str, str] | None = None
        super().__init__(_linen=linen, _groups=options.groups_json(), _panel_id=uuid.uuid4().hex, **kwargs)
        self._code = self._code_text()
        self.observe(self._on_values, "_values")
        self.observe(self._on_against, "_against")
        self.on_msg(self._on_message)
        if compare is not None:
            self.on_compare(compare)
        if inputs is not None:
            self._inputs = tuple(inputs)
            self._compare_fn = self._compare_on_inputs
            self._can_compare = True
            self.against = against

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
        return self._error

    @property
    def against(self) -> str:
        """What Compare puts the current view against: ``"model"`` or ``"presets"`` (a menu in the panel).

        ``"model"`` runs the inputs through the model as it is and through
        the view; ``"presets"`` through the model in its train preset, its
        eval preset, and the view. A panel made without ``inputs=`` has no
        such choice: ``""``.
        """
        return self._against

    @against.setter
    def against(self, value: str) -> None:
        if self._inputs is None:
            raise ValueError("against applies to a panel made with inputs=, not to a compare function")
        if value not in AGAINST:
            raise ValueError(f"against takes {' or '.join(map(repr, AGAINST))}, got {value!r}")
        self._against = value

    def set(self, class_name: str, **options: Any) -> None:
        """Sets options of one module class, as the switches do; None clears one.

        The options are merged into what the panel shows, so
        ``set("MultiHeadAttention", batch_size=1, max_length=32)`` completes a
        ``decode`` switched on in the browser.

        Args:
          class_name: a card's title, e.g. ``"Dropout"``.
          **options: option names and their values.

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
        """Registers ``fn(view) -> result`` for the Compare button.

        When ``result`` is a :class:`~jaxcapture_nb.Comparison` (what
        :func:`~jaxcapture_nb.compare_modes` returns) the panel draws it;
        any result is kept in ``panel.comparison``.
        ``mode_panel(model, inputs=(x,))`` registers the usual one: the
        current view against the model as it is, on ``x``.

        Args:
          fn: called with ``panel.model`` when Compare is pressed.
        """
        self._compare_fn = fn
        self._inputs = None
        self._against = ""
        self._can_compare = True

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
        return view_label(self._settings)

    def _compare_on_inputs(self, view: Any) -> Comparison:
        """The panel's own comparison: ``view`` against what ``against`` names, on ``inputs=``."""
        if self._against == "presets":
            # Train first: the view's shift then reads as how far it is from training.
            modes = {"train preset": "train", "eval preset": "eval", self.view_label(): view}
        else:
            modes = {"model as it is": {}, self.view_label(): view}
        return compare_modes(self.original, *self._inputs, modes=modes)

    def compare(self) -> Any:
        """Runs the compare function on the current view and shows its result, as the button does.

        Returns:
          What the compare function returned, also kept in ``panel.comparison``.

        Raises:
          ValueError: the panel has nothing to compare on.
          Exception: whatever the compare function raises (the button shows it instead).
        """
        if self._compare_fn is None:
            raise ValueError(
                "nothing to compare on: make the panel with mode_panel(model, inputs=(x,)), "
                "or register a function with panel.on_compare(fn)"
            )
        self._busy = True
        self._compare_failure = ""
        self._error = self._error_text()
        try:
            result = self._compare_fn(self.model)
        finally:
            self._busy = False
        self.comparison = result
        self._compared_with = (self.settings, self._against)
        drawn = comparison_of(result)
        with self.hold_sync():
            for name, value in comparison_state(drawn, "_compare").items():
                setattr(self, name, value)
            self._compared = self._compared_text(result, drawn)
            self._stale = False
        self._update_display()
        return result

    def _shown_values(self) -> dict[str, dict[str, Any]]:
        """A copy of the values the panel shows: those behind ``model``."""
        return {c: dict(o) for c, o in self._settings.items()}

    def _preset_values(self, name: str) -> dict[str, dict[str, Any]]:
        return self._options.preset_values(name, self._settings)

    def _apply(self, values: Any, *, strict: bool) -> None:
        """Builds the view of ``values``; a failure raises (``strict``) or is shown, keeping the last view."""
        try:
            settings = self._options.normalized(values)
            view = self._options.build(settings)
        except ModeError as e:
            if strict:
                raise
            self._mode_error = (
                f"not applied: {str(e).rstrip('.')}. The switches show panel.model as it still is."
            )
        else:
            self._settings, self._view, self._mode_error = settings, view, ""
        with self.hold_sync():
            self._quiet = True  # this write is the kernel's own, not a new choice to apply
            try:
                # What panel.model is, also after a refused change: the
                # browser redraws every control from it.
                self._values = as_json(self._settings)
            finally:
                self._quiet = False
            self._code = self._code_text()
            self._error = self._error_text()
            self._stale = self._is_stale()
            self._revision += 1
        self._update_display()

    def _is_stale(self) -> bool:
        """Whether the switches (or what Compare compares against) moved since the comparison shown."""
        return self._compared_with is not None and self._compared_with != (self._settings, self._against)

    def _on_values(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._apply(change["new"], strict=False)

    def _on_against(self, change: dict[str, Any]) -> None:
        if self._inputs is not None and change["new"] not in AGAINST:
            self._against = change["old"]  # an unknown choice from the browser: keep the last one
            return
        self._stale = self._is_stale()
        self._update_display()

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        action = content.get("action") if isinstance(content, Mapping) else None
        if not isinstance(action, str):
            action = repr(action)  # a malformed message is answered as an unknown preset
        if action == "compare":
            try:
                self.compare()
            except Exception as e:  # whatever the user's function raises belongs in the error box
                self._compare_failure = (
                    f"compare failed: {type(e).__name__}: {e} (run panel.compare() for the traceback)"
                )
                self._error = self._error_text()
                self._update_display()
            return
        try:
            values = self._preset_values(action)
        except ModeError as e:
            self._mode_error = str(e)
            self._error = self._error_text()
            self._update_display()
            return
        self._apply(values, strict=False)

    def _error_text(self) -> str:
        return "\n".join(e for e in (self._mode_error, self._compare_failure) if e)


def mode_panel(
    model: Any,
    *,
    inputs: tuple[Any, ...] | None = None,
    compare: Callable[[Any], Any] | None = None,
    against: str = "model",
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
        :func:`~jaxcapture_nb.compare_modes`), drawn in the panel.
      compare: instead of ``inputs``, your own ``compare(view) -> result``
        for the Compare button; a :class:`~jaxcapture_nb.Comparison` result
        is drawn in the panel, any result is kept in ``panel.comparison``.
      against: with ``inputs``, what the current view is compared with:
        ``"model"`` (the model as it is) or ``"presets"`` (its train and eval
        presets); the panel has a menu for it too.

    Returns:
      The :class:`ModePanel` widget.

    Raises:
      TypeError: ``model`` is not a Flax module; both ``inputs`` and
        ``compare``; ``inputs`` that is not a tuple; ``inputs`` for a Linen
        module.
      ValueError: an ``against`` other than ``"model"`` or ``"presets"``, or
        one without ``inputs``.

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
    return ModePanel(model, compare=compare, inputs=inputs, against=against)
