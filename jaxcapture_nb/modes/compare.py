"""compare_modes(): the same inputs through several modes of a model, site by site.

Each mode's run is captured (every sow and every submodule's output), the
model's state is put back after every run, and each site's values from all
modes are binned on one shared range, on the device, so their histograms can
be overlaid and compared. The shift score of a site is the earth mover's
(Wasserstein-1) distance between its histogram in a mode and in the first
mode, in units of their pooled standard deviation: scale-free, zero when the
distributions match, and sensitive to what a mean difference misses (Dropout
keeps the mean and moves mass to zero).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flax import linen as nn
from flax import nnx

from jaxcapture_nb.capturing.capture import Capture, capture
from jaxcapture_nb.core.names import quoted
from jaxcapture_nb.modes.call_modes import ModePlan, plan_modes, preset_note, unswitched_note
from jaxcapture_nb.modes.comparison import Comparison, compare_captures
from jaxcapture_nb.modes.modes import Mode, ModeError, mode_label
from jaxcapture_nb.stats.summary import DEFAULT_BINS


def _labelled(modes: Sequence[Mode] | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(modes, Mapping):
        return dict(modes)
    if isinstance(modes, str):
        raise TypeError(f"modes takes a sequence of modes, e.g. ('train', 'eval'), got the string {modes!r}")
    for mode in modes:
        if isinstance(mode, nnx.Module):
            raise ModeError(
                "a view given as a mode needs a label: pass modes as a dict, e.g. "
                "modes={'as is': {}, 'view': view}"
            )
        if not isinstance(mode, (str, Mapping)):
            raise ModeError(
                "a mode is 'train', 'eval' or a dict of view options and call arguments, "
                f"got {quoted(mode)} ({type(mode).__name__})"
            )
    labelled = {mode_label(m): m for m in modes}
    if len(labelled) != len(modes):
        raise ValueError(f"modes names a mode twice: {[mode_label(m) for m in modes]}; give each mode once")
    return labelled


def compare_modes(
    model: Any,
    *args: Any,
    modes: Sequence[Mode] | Mapping[str, Any] = ("train", "eval"),
    call: Callable[[Any], Any] | None = None,
    update_stats: bool = False,
    include: Any = None,
    bins: int = DEFAULT_BINS,
    **kwargs: Any,
) -> Comparison:
    """Runs the same inputs through each mode of a model and compares every site.

    For an NNX model each mode is a view (see :func:`with_mode`) that shares
    the model's weights; each run is captured with ``methods=True``, so every
    submodule's output is a site as well as every sowed value. The model's
    state (BatchNorm statistics, RNG counters) is put back before each mode and
    at the end, unless ``update_stats=True``; when a run raises it is always
    put back, so a failed comparison leaves the model as it was.

    An NNX model may also switch modes with an argument of its call
    (``model(x, training=True)``), which wins over what a view sets when the
    model passes it down (``self.dropout(h, deterministic=not training)``).
    In a mode dict, a name that a submodule offers as a view option sets that
    option, and a name that ``__call__`` takes as a keyword is passed to the
    call; a name that is both (``deterministic``) does both. So
    ``modes={"train": {"training": True}, "eval": {"training": False}}``
    passes ``training=`` to each run. The presets pass the model's mode
    switches as well: ``training``, ``train``, ``is_training`` (True in
    ``"train"``), and ``deterministic``, ``use_running_average``, ``eval``,
    ``evaluation`` (True in ``"eval"``), where ``__call__`` takes one with a
    bool default or annotation, and :attr:`Comparison.note` says what they
    passed. A switch the inputs already give, or any switch when ``call=``
    runs the model, is left as it is; if every site is then the same in all
    modes, the note says which argument to pass.

    For a Linen module, modes are call arguments: pass ``modes`` as a dict of
    label to keyword arguments of ``apply``, e.g.
    ``{"train": {"train": True, "mutable": ["batch_stats"]}, "eval": {"train": False}}``,
    and the variables as the first positional argument.

    Args:
      model: an NNX module, or a Linen module.
      *args: the inputs (for Linen: ``variables`` first, then the inputs).
      modes: presets (``"train"``, ``"eval"``) or dicts of view options and
        call arguments, or a dict of label to mode, where a mode may also be
        a view of the model made elsewhere (``{"as is": {}, "panel":
        panel.model}``); two or more. The first is the reference the shift
        scores are measured against.
      call: ``call(view)`` runs the model instead of ``view(*args, **kwargs)``
        (e.g. ``lambda m: m.encode(x)``); NNX only. Modes then set view
        options only.
      update_stats: keep what the runs changed in the model's state, run after
        run, instead of putting it back.
      include: as for :func:`~jaxcapture_nb.capture`: a regex (or callable)
        on the dotted site path selecting the sites to compare.
      bins: histogram bins.
      **kwargs: keyword arguments of the call, the same in every mode.

    Returns:
      A :class:`Comparison` with its sites sorted by shift, largest first.

    Raises:
      ModeError: a mode the model cannot take: an unknown preset, a name
        that is neither a view option nor a keyword of ``__call__``, a mode
        switch given something other than True or False, a call argument
        with ``call=`` or one the inputs already give. Raised before
        anything runs.
      ValueError: fewer than two modes, or a mode given twice.
      TypeError: a Linen module with preset modes, ``call=`` or ``update_stats=``,
        or without its variables.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> model = nnx.Sequential(nnx.Linear(3, 8, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
      >>> result = compare_modes(model, jnp.ones((16, 3)))
      >>> result.modes, result.sites[0].site
      (['train', 'eval'], 'layers.1.__call__')

      A model whose call switches its mode:

      >>> class Net(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.linear, self.dropout = nnx.Linear(3, 8, rngs=rngs), nnx.Dropout(0.5, rngs=rngs)
      ...     def __call__(self, x, training: bool = False):
      ...         return self.dropout(self.linear(x), deterministic=not training)
      >>> result = compare_modes(Net(nnx.Rngs(0)), jnp.ones((16, 3)))
      >>> result.note
      'Net switches modes with its call argument training=: the presets pass training=True in train and training=False in eval'
      >>> result.call_arguments, result.sites[0].site, result.sites[0].shift > 0
      ({'train': {'training': True}, 'eval': {'training': False}}, 'dropout.__call__', True)
      >>> result = compare_modes(Net(nnx.Rngs(0)), jnp.ones((16, 3)), modes={"on": {"training": True}, "off": {}})
      >>> result.call_arguments
      {'on': {'training': True}, 'off': {}}
    """
    labelled = _labelled(modes)
    if len(labelled) < 2:
        raise ValueError(
            f"compare_modes needs two or more modes to compare, got {list(labelled)}; "
            "e.g. modes=('train', 'eval')"
        )
    if isinstance(model, nn.Module):
        if call is not None or update_stats:
            raise TypeError(
                "call= and update_stats= apply to NNX models; a Linen module is run by apply(), "
                "and its updated collections are in each run's output (pass mutable= in the mode)"
            )
        run: _NnxRunner | _LinenRunner = _LinenRunner(model, args, kwargs, labelled)
        plans: dict[str, Any] = labelled
        arguments = {label: dict(mode) for label, mode in labelled.items()}
    elif isinstance(model, nnx.Module):
        plans = plan_modes(model, labelled, args, kwargs, call_given=call is not None)
        run = _NnxRunner(model, args, kwargs, call, update_stats)
        arguments = {label: dict(plan.arguments) for label, plan in plans.items()}
    else:
        raise TypeError(
            f"compare_modes() needs a flax.nnx.Module or flax.linen.Module, got {type(model).__name__}"
        )
    captures: dict[str, Capture] = {}
    outputs: dict[str, Any] = {}
    with run as runner:
        for label, plan in plans.items():
            captures[label], outputs[label] = runner(plan, include, bins)
    sites = compare_captures(list(labelled), captures, bins)
    note = ""
    if isinstance(model, nnx.Module):
        note = preset_note(model, plans)
        if sites and all(s.same for s in sites):
            note = unswitched_note(model, plans, args, kwargs, call is not None) or note
    return Comparison(
        list(labelled), labelled, sites, captures, outputs, bins, call_arguments=arguments, note=note
    )


class _NnxRunner:
    """Runs views of an NNX model; puts its state back before each run and at the end."""

    def __init__(
        self, model: nnx.Module, args: tuple, kwargs: dict, call: Callable | None, update_stats: bool
    ):
        self.model = model
        self.call = call or (lambda view, **arguments: view(*args, **kwargs, **arguments))
        self.update_stats = update_stats
        self.before: Any = None

    def __enter__(self) -> Callable:
        # Runs change state such as batch statistics and RNG counters, never
        # the parameters, so only the rest is copied.
        self.before = nnx.clone(nnx.state(self.model, nnx.Not(nnx.Param)))
        return self.run

    def run(self, plan: ModePlan, include: Any, bins: int) -> tuple[Capture, Any]:
        if not self.update_stats:
            nnx.update(self.model, self.before)
        with capture(plan.view, methods=True, include=include, bins=bins) as cap:
            # A plan has call arguments only without call= (plan_modes refuses them with it).
            out = self.call(plan.view, **plan.arguments)
        return cap, out

    def __exit__(self, *exc_info) -> bool:
        if not self.update_stats or exc_info[0] is not None:
            nnx.update(self.model, self.before)
        return False


class _LinenRunner:
    """Calls ``apply`` of a Linen module with each mode's arguments (Linen state is never mutated)."""

    def __init__(self, module: nn.Module, args: tuple, kwargs: dict, labelled: dict[str, Any]):
        presets = [label for label, mode in labelled.items() if not isinstance(mode, Mapping)]
        if presets:
            raise TypeError(
                "Linen modules take their modes as call arguments, not presets: pass modes as a dict, "
                "e.g. modes={'train': {'train': True}, 'eval': {'train': False}}"
            )
        if not args:
            raise TypeError("compare_modes(linen_module, variables, *inputs): the variables come first")
        if not isinstance(args[0], Mapping):
            shape = getattr(args[0], "shape", None)
            got = f"a {type(args[0]).__name__}" if shape is None else f"an array of shape {tuple(shape)}"
            raise TypeError(
                "compare_modes(linen_module, variables, *inputs): the variables are missing (the first "
                f"argument after the module is {got}, not a dict of collections). Pass what module.init() "
                "returned first: compare_modes(module, variables, x, modes=...)"
            )
        self.module = module
        self.args = args
        self.kwargs = kwargs

    def __enter__(self) -> Callable:
        return self.run

    def run(self, mode: Mapping[str, Any], include: Any, bins: int) -> tuple[Capture, Any]:
        with capture(self.module, methods=True, include=include, bins=bins) as cap:
            out = self.module.apply(*self.args, **self.kwargs, **mode)
        return cap, out

    def __exit__(self, *exc_info) -> bool:
        return False
