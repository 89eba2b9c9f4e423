"""Modes an NNX model takes as arguments of its call: ``model(x, training=True)``.

Many models switch between training and evaluation with an argument of
``__call__`` that they pass down (``self.dropout(h, deterministic=not
training)``), and such an argument wins over what a view sets on the
submodules. Ports of EfficientNet or of graph attention networks do this, and
so do most models first written for Linen or Haiku. :func:`mode_arguments`
finds these arguments by name in the signature. :func:`plan_modes` splits each
mode given to :func:`~jaxcapture_nb.compare_modes` into the view it runs and
the keyword arguments it passes, and checks both before anything runs. The
notes say what the presets passed, or why no mode changed anything.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from flax import nnx

from jaxcapture_nb.core.names import quoted, shown_name
from jaxcapture_nb.modes.modes import ModeError, _annotation_text, _kind, view_options, with_mode

# Call arguments that switch a model's mode, each with the value it takes in
# training. Only these names are read as switches, and only with a bool
# default or annotation, so that ``train_steps: int`` is never taken for one.
MODE_ARGUMENTS: dict[str, bool] = {
    "training": True,
    "train": True,
    "is_training": True,
    "deterministic": False,
    "use_running_average": False,
    "eval": False,
    "evaluation": False,
}


@dataclasses.dataclass(frozen=True)
class ModePlan:
    """How one mode runs.

    Attributes:
      view: the view of the model it runs (see :func:`~jaxcapture_nb.with_mode`).
      arguments: the keyword arguments it adds to the model's call.
      preset: whether ``arguments`` came from a preset (``"train"``, ``"eval"``).
    """

    view: nnx.Module
    arguments: dict[str, Any]
    preset: bool = False


def call_keywords(model: nnx.Module) -> dict[str, inspect.Parameter]:
    """The parameters of ``model.__call__`` that can be passed by keyword, by name.

    Example:
      >>> class Net(nnx.Module):
      ...     def __call__(self, x, /, mask=None, *, training: bool = False, **kwargs): ...
      >>> list(call_keywords(Net()))
      ['mask', 'training']
    """
    try:
        parameters = inspect.signature(model.__call__).parameters
    except (TypeError, ValueError):  # a __call__ without a signature Python can read
        return {}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name: p for name, p in parameters.items() if p.kind in keyword}


def _is_bool(parameter: inspect.Parameter) -> bool:
    return isinstance(parameter.default, bool) or _kind(_annotation_text(parameter)) == "bool"


def mode_arguments(model: nnx.Module) -> dict[str, bool]:
    """The call arguments that switch the model's mode, each with the value it takes in training.

    A switch is a keyword parameter of ``__call__`` named as in
    :data:`MODE_ARGUMENTS` (``training``, ``train``, ``is_training``,
    ``deterministic``, ``use_running_average``, ``eval``, ``evaluation``)
    with a bool default or a bool annotation (``bool | None`` too).

    Example:
      >>> class Net(nnx.Module):
      ...     def __call__(self, x, training: bool = False, deterministic=None, train: int = 0): ...
      >>> mode_arguments(Net())
      {'training': True}
    """
    return {
        name: MODE_ARGUMENTS[name]
        for name, parameter in call_keywords(model).items()
        if name in MODE_ARGUMENTS and _is_bool(parameter)
    }


def preset_arguments(preset: str, switches: Mapping[str, bool]) -> dict[str, bool]:
    """What a preset passes to the call: each switch's value in training, or its opposite in eval.

    Example:
      >>> preset_arguments("eval", {"training": True, "deterministic": False})
      {'training': False, 'deterministic': True}
    """
    training = preset == "train"
    return {name: value if training else not value for name, value in switches.items()}


def _given(model: nnx.Module, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments that the inputs already give, by name."""
    try:
        return dict(inspect.signature(model.__call__).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):  # inputs the call cannot take fail when it runs, as they would
        return dict(kwargs)


def _listing(items: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _arguments_text(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in arguments.items())


def _names_text(names: Iterable[str]) -> str:
    names = list(names)
    return f"argument{'s' if len(names) > 1 else ''} {_listing(f'{n}=' for n in names)}"


def modes_example(switches: Mapping[str, bool]) -> str:
    """The ``modes=`` that passes the switches, train first.

    Example:
      >>> modes_example({"training": True})
      "modes={'train': {'training': True}, 'eval': {'training': False}}"
    """
    presets = {preset: preset_arguments(preset, switches) for preset in ("train", "eval")}
    return f"modes={presets!r}"


def _split(
    model: nnx.Module,
    label: str,
    mode: Mapping[str, Any],
    offered: set[str],
    given: Mapping[str, Any],
    call_given: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A mode dict as view options and call arguments; a name that is both goes to both."""
    keywords = call_keywords(model)
    cls = type(model).__name__
    unknown = [k for k in mode if k not in offered and k not in keywords]
    if unknown:
        names = ", ".join(quoted(k) for k in unknown)
        one = len(unknown) == 1
        raise ModeError(
            f"{names} {'is neither an option' if one else 'are neither options'} of the modules set "
            f"(they offer: {', '.join(sorted(offered)) or 'none'}) nor {'a keyword' if one else 'keywords'} "
            f"of {cls}.__call__ (it takes: {', '.join(keywords) or 'none'}); "
            "see jaxcapture_nb.view_options(model)"
        )
    switches = mode_arguments(model)
    arguments = {}
    for name, value in mode.items():
        if name not in keywords:
            continue
        if name in switches and not isinstance(value, (bool, np.bool_)):
            raise ModeError(
                f"mode {quoted(label)} gives {name}={quoted(value)}, but {name}= switches the mode of "
                f"{cls} and takes True or False"
            )
        if name in offered and (call_given or name in given):
            continue  # the call is the user's: the name sets the view option alone, as it always did
        if call_given:
            raise ModeError(
                f"mode {quoted(label)} passes {name}= to {cls}.__call__, but call= runs the model and "
                "takes no arguments from the modes: drop call= and give the inputs, "
                "compare_modes(model, x, modes=...)"
            )
        if name in given:
            raise ModeError(
                f"mode {quoted(label)} sets {name}=, which the inputs already give to every mode "
                f"({name}={quoted(given[name])}): leave it out of the inputs and set it in each mode"
            )
        arguments[name] = value
    return {k: v for k, v in mode.items() if k in offered}, arguments


def plan_modes(
    model: nnx.Module, labelled: Mapping[str, Any], args: tuple, kwargs: Mapping[str, Any], call_given: bool
) -> dict[str, ModePlan]:
    """Each mode's view and call arguments, checked before anything runs.

    A preset is a view with the preset's options, and passes each switch of
    :func:`mode_arguments` its value in that preset, unless ``call=`` runs the
    model or the inputs give the switch. A dict sets each name as a view
    option where a module offers it, and passes it to the call where
    ``__call__`` takes it (both for a name that is both). A module is a view
    made elsewhere, run as it is.

    Raises:
      ModeError: an unknown preset or name, a switch given something other
        than a bool, a call argument with ``call=`` or one the inputs
        already give, or a combination of options the model cannot take.
    """
    given = _given(model, args, kwargs)
    switches = {} if call_given else {k: v for k, v in mode_arguments(model).items() if k not in given}
    offered = {option.name for group in view_options(model) for option in group.options}
    plans = {}
    for label, mode in labelled.items():
        if isinstance(mode, nnx.Module):
            plans[label] = ModePlan(mode, {})
        elif isinstance(mode, Mapping):
            view_part, arguments = _split(model, label, mode, offered, given, call_given)
            plans[label] = ModePlan(with_mode(model, view_part), arguments)
        else:  # a preset; with_mode refuses anything else
            view = with_mode(model, mode)
            plans[label] = ModePlan(view, preset_arguments(mode, switches), preset=True)
    return plans


def preset_note(model: nnx.Module, plans: Mapping[str, ModePlan]) -> str:
    """What the presets passed to the call, or "" when they passed nothing.

    Example:
      >>> class Net(nnx.Module):
      ...     def __call__(self, x, training: bool = False): ...
      >>> plans = plan_modes(Net(), {"train": "train", "eval": "eval"}, (1.0,), {}, call_given=False)
      >>> preset_note(Net(), plans)
      'Net switches modes with its call argument training=: the presets pass training=True in train and training=False in eval'
    """
    passed = {label: plan.arguments for label, plan in plans.items() if plan.preset and plan.arguments}
    if not passed:
        return ""
    names = next(iter(passed.values()))
    each = _listing(
        f"{_arguments_text(arguments)} in {shown_name(label)}" for label, arguments in passed.items()
    )
    return (
        f"{type(model).__name__} switches modes with its call {_names_text(names)}: the presets pass {each}"
    )


def unswitched_note(
    model: nnx.Module, plans: Mapping[str, ModePlan], args: tuple, kwargs: Mapping[str, Any], call_given: bool
) -> str:
    """Why every site is the same in all modes, when the model's call switches modes and no mode switched it.

    "" when the model has no switch (:func:`mode_arguments`) or a mode passed one.
    """
    switches = mode_arguments(model)
    if not switches or any(set(plan.arguments) & set(switches) for plan in plans.values()):
        return ""
    given = {k: v for k, v in _given(model, args, kwargs).items() if k in switches}
    if call_given:
        why, fix = "which call= passes the same way in every mode", "drop call= and pass it in each mode"
    elif given:
        why = f"which the inputs give every mode as {_arguments_text(given)}"
        fix = "leave it out of the inputs and pass it in each mode"
    else:
        why, fix = "which these modes leave as it is", "pass it in each mode"
    return (
        f"every site is the same in all modes: {type(model).__name__} switches modes with its call "
        f"{_names_text(switches)}, {why}; {fix}, e.g. {modes_example(switches)}"
    )
