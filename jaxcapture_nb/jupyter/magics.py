"""%%capture_intermediates: a cell magic that is a thin layer over capture().

The magic runs the cell's code itself, as ``%%time`` does, rather than through
a nested ``run_cell``, so an exception leaves the magic and the cell counts as
failed for IPython, nbclient, papermill and nbval alike. The code is compiled
under the running cell's own name, so a traceback reads ``Cell In[7], line 3``
like any failing cell's, and shows the cell's frames only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import functools
import linecache
import sys
import types
from typing import Any

from flax import linen as nn
from flax import nnx
from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from jaxcapture_nb.capturing.capture import capture
from jaxcapture_nb.capturing.recorder import KEEP_MODES
from jaxcapture_nb.core.clock import STEP_MODES
from jaxcapture_nb.core.hosts import should_display
from jaxcapture_nb.modes.modes import PRESETS, ModeError, with_mode
from jaxcapture_nb.runs.watch import watch
from jaxcapture_nb.stats.summary import check_bins


def _is_flax_module(value: Any) -> bool:
    return isinstance(value, (nnx.Module, nn.Module))


def _unquote(text: str | None) -> str | None:
    # IPython splits magic arguments without removing quotes.
    if text and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _variable_types(names: str | None, namespace: dict[str, Any]) -> tuple[type, ...]:
    if not names:
        return ()
    types = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        found = namespace.get(name, getattr(nnx, name, None))
        if not (isinstance(found, type) and issubclass(found, nnx.Variable)):
            raise UsageError(
                f"--types: {name!r} is not an nnx.Variable type. Use names such as "
                "Intermediate,Perturbation, or a Variable subclass defined in the notebook."
            )
        types.append(found)
    return tuple(types)


def _models(expressions: list[str], namespace: dict[str, Any]) -> dict[str, Any]:
    if not expressions:
        found = {name: v for name, v in namespace.items() if not name.startswith("_") and _is_flax_module(v)}
        # A module reachable from another one is captured through it.
        inner = {
            id(m)
            for v in found.values()
            if isinstance(v, nnx.Module)
            for path, m in nnx.iter_modules(v)
            if path
        }
        models = {name: v for name, v in found.items() if id(v) not in inner}
        if not models:
            raise UsageError(
                "%%capture_intermediates found no Flax module in the notebook's variables; "
                "name the model to capture: %%capture_intermediates model"
            )
        return models
    models = {}
    for expression in expressions:
        try:
            value = eval(expression, namespace)  # noqa: S307 - the user's own notebook expression
        except Exception as e:
            raise UsageError(f"%%capture_intermediates: could not evaluate {expression!r}: {e}") from None
        if not _is_flax_module(value):
            raise UsageError(
                f"%%capture_intermediates: {expression!r} is a {type(value).__name__}, not a "
                "flax.nnx.Module or flax.linen.Module; name the model whose sows to capture."
            )
        models[expression] = value
    return models


@dataclasses.dataclass(frozen=True)
class _Cell:
    """A cell's code, compiled: its statements, and its last expression if it ends in one."""

    body: types.CodeType
    last: types.CodeType | None


def _compile(shell: Any, line: str, cell: str) -> _Cell:
    """Compiles the cell's code the way IPython compiles a cell.

    As in ``%%time``, the code is transformed first (so ``%magics`` and
    ``!commands`` work in it) and compiled by the shell's compiler. It is
    compiled under the running cell's own name, so tracebacks name it
    ``Cell In[7]``, and with the magic's line as line 1, so their line numbers
    (and the debugger's) are the ones the notebook shows.
    """
    code = shell.transform_cell(cell)
    source = f"%%capture_intermediates {line}\n{code}"
    filename = _running_cell(shell)
    if filename is None:  # called from Python rather than from a cell
        filename = shell.compile.cache(source, shell.execution_count)
    else:
        # As IPython's CachingCompiler.cache does; the cell's own entry held
        # only the one-line call of this magic.
        lines = [text + "\n" for text in source.splitlines()]
        linecache.cache[filename] = (len(source), None, lines, filename)
    tree = shell.transform_ast(shell.compile.ast_parse("\n" + code, filename=filename))
    # IPython's check for a closing ";" reads the cell as it ran: this magic's call.
    shown = (
        tree.body
        and isinstance(tree.body[-1], ast.Expr)
        and not DisplayHook.semicolon_at_end_of_expression(code)
    )
    last = tree.body.pop() if shown else None
    return _Cell(
        body=shell.compile(tree, filename, "exec"),
        last=None if last is None else shell.compile(ast.Expression(last.value), filename, "eval"),
    )


def _running_cell(shell: Any) -> str | None:
    """The name IPython compiled the running cell under, from the cell's frame on the stack."""
    is_cell = getattr(shell.compile, "format_code_name", None)  # IPython 8 and later
    frame = sys._getframe(1)
    while frame is not None and is_cell is not None:
        code = frame.f_code
        if code.co_name == "<module>" and is_cell(code.co_filename) is not None:
            return code.co_filename
        frame = frame.f_back
    return None


def _run(shell: Any, cell: _Cell, namespace: dict[str, Any]) -> None:
    """Runs a compiled cell like IPython would: the last expression is displayed."""
    try:
        exec(cell.body, namespace)  # noqa: S102 - the user's own cell
        if cell.last is not None:
            shell.displayhook(eval(cell.last, namespace))  # noqa: S307
    except (Exception, KeyboardInterrupt) as e:
        _show_from_the_cell(shell, e, e.__traceback__.tb_next)
        raise


def _show_from_the_cell(shell: Any, error: BaseException, traceback: types.TracebackType | None) -> None:
    """Makes IPython show ``error``'s traceback from the cell's code on.

    The error leaves the magic, so the cell fails, and IPython would show the
    magic's frames above the cell's. IPython asks an exception for its own
    traceback through ``_render_traceback_`` (the hook ipyparallel's remote
    errors use), so the error carries the one that starts at the cell.
    """
    if hasattr(error, "_render_traceback_"):
        return

    def render() -> list[str]:
        return shell.InteractiveTB.structured_traceback(type(error), error, traceback, tb_offset=0)

    with contextlib.suppress(AttributeError, TypeError):  # an exception type that refuses attributes
        error._render_traceback_ = render  # type: ignore[attr-defined]  # IPython's hook for custom tracebacks


def _parse_mode(text: str) -> Any:
    """``eval`` -> ``"eval"``; ``decode=True,batch_size=(1,2)`` -> a dict of options."""
    text = _unquote(text.strip())
    if "=" not in text:
        if text not in PRESETS:
            raise UsageError(
                f"--mode: unknown mode {text!r}: use {' or '.join(PRESETS)}, or name=value options "
                "such as --mode deterministic=True,use_running_average=False"
            )
        return text
    try:
        call = ast.parse(f"mode({text})", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            raise ValueError
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (ValueError, TypeError, SyntaxError):
        raise UsageError(
            f"--mode: {text!r} is not name=value options with Python literal values; "
            "e.g. --mode deterministic=True,use_running_average=False"
        ) from None


def _views(models: dict[str, Any], mode_text: str, named: bool) -> dict[str, Any]:
    """The view of each model in the mode, to bind to the model's name for the cell.

    Linen modules take their modes as call arguments, so when the models were
    found rather than named they run as they are.
    """
    mode = _parse_mode(mode_text)
    views = {}
    for name, model in models.items():
        if not isinstance(model, nnx.Module):
            if not named:
                continue
            raise UsageError(
                f"--mode: {name} is a Linen module, whose modes are call arguments (train=, "
                "deterministic=), not view options; pass them in the cell's apply() call"
            )
        if not name.isidentifier():
            raise UsageError(
                f"--mode runs the cell with the model's name bound to its view, and {name!r} is not a "
                "name; assign it first (e.g. encoder = model.encoder) and name that"
            )
        try:
            views[name] = with_mode(model, mode)
        except ModeError as e:
            raise UsageError(f"--mode: {e}") from None
    return views


@magics_class
class CaptureMagics(Magics):
    """The ``%%capture_intermediates`` cell magic."""

    @magic_arguments()
    @argument("models", nargs="*", help="Flax modules to capture (default: every module in the notebook)")
    @argument("--types", default=None, help="Variable types by name, e.g. Intermediate,Perturbation")
    @argument("--methods", action="store_true", help="also record every submodule's method outputs")
    @argument("--include", default=None, help="keep only sites whose dotted path matches this regex")
    @argument("--keep", default="all", choices=KEEP_MODES, help="all | last | summary")
    @argument("--bins", type=int, default=64, help="histogram bins")
    @argument("--out", default="_capture", help="variable that receives the Capture")
    @argument("--no-display", action="store_true", help="do not display the widget")
    @argument("--stream", action="store_true", help="stream summaries into a live view (see watch())")
    @argument("--every", type=int, default=1, help="with --stream: record one training step in N")
    @argument(
        "--steps",
        default="auto",
        choices=STEP_MODES,
        help="with --stream: what a step is (auto: a call that trains the model; see watch())",
    )
    @argument("--grads", action="store_true", help="also record gradients of Module.perturb values")
    @argument("--mode", default=None, help="run on a view: train, eval, or name=value,... view options")
    @cell_magic
    def capture_intermediates(self, line: str, cell: str) -> None:
        """Runs the cell inside ``capture()`` and shows what the model sowed.

        ``%%capture_intermediates model --methods --keep last --out cap`` stands for::

            with jaxcapture_nb.capture(model, methods=True, keep="last") as cap:
                <the cell>
            display(cap.show())

        With several models, ``--out`` receives a dict of their captures by name.
        If the cell raises, the traceback shows, the cell fails, and the partial
        capture is still displayed and bound. The widget (or the live view) is
        displayed only in a notebook front end (an IPython kernel, or marimo),
        and in a ``jax.distributed`` run only on process 0; ``--no-display``
        never displays it.

        ``%%capture_intermediates model --stream --every 10`` stands for::

            with jaxcapture_nb.watch(model, every=10) as w:
                <the cell>

        and binds the :class:`~jaxcapture_nb.Watch` to ``--out``.

        ``%%capture_intermediates model --mode eval`` runs the cell with ``model``
        bound to ``jaxcapture_nb.with_mode(model, "eval")`` (an ``nnx.view`` that
        shares the weights) and captures that view; the name is bound to the
        model again afterwards. ``--mode deterministic=True,use_running_average=False``
        sets those view options instead of a preset.
        """
        args = argparse.Namespace(**_options(line))
        namespace = self.shell.user_ns
        try:
            check_bins(args.bins)
        except ValueError as e:
            raise UsageError(f"--{e}") from None
        var_types = _variable_types(args.types, namespace)
        models = _models(args.models, namespace)
        views = _views(models, args.mode, named=bool(args.models)) if args.mode is not None else {}
        code = _compile(self.shell, line, cell)
        with _bound(namespace, views):
            self._capture_or_stream(args, code, {**models, **views}, var_types)

    def _capture_or_stream(
        self, args: Any, cell: _Cell, models: dict[str, Any], var_types: tuple[type, ...]
    ) -> None:
        if args.stream:
            self._stream(args, cell, models)
            return
        if args.every != 1:
            raise UsageError("--every applies to --stream; add --stream, or use --keep last in a loop")
        if args.steps != "auto":
            raise UsageError("--steps applies to --stream; add --stream")
        captures = _for_each(
            models,
            lambda model: capture(
                model,
                *(var_types if isinstance(model, nnx.Module) else ()),
                methods=args.methods,
                include=_unquote(args.include),
                keep=args.keep,
                bins=args.bins,
                grads=args.grads,
            ),
        )
        try:
            self._run_inside(captures, cell, args.out)
        finally:
            if should_display(False if args.no_display else None):
                for cap in captures.values():
                    display(cap.show())

    def _stream(self, args: Any, cell: _Cell, models: dict[str, Any]) -> None:
        if args.keep != "all" or args.types:
            raise UsageError(
                "--stream records summaries of sowed Intermediate values; drop --keep and --types"
            )
        not_nnx = [name for name, model in models.items() if not isinstance(model, nnx.Module)]
        if not_nnx:
            raise UsageError(
                f"--stream needs NNX models; {', '.join(not_nnx)} is a Linen module. Capture it "
                "without --stream, or summarize() in your step and hand the results to watch().update"
            )
        watches = _for_each(
            models,
            lambda model: watch(
                model,
                every=args.every,
                steps=args.steps,
                grads=args.grads,
                methods=args.methods,
                include=_unquote(args.include),
                bins=args.bins,
                display=False if args.no_display else None,
            ),
        )
        self._run_inside(watches, cell, args.out)

    def _run_inside(self, contexts: dict[str, Any], cell: _Cell, out: str) -> None:
        """Runs the cell inside every context; binds them to ``out`` even if it raises."""
        try:
            with contextlib.ExitStack() as stack:
                for context in contexts.values():
                    stack.enter_context(context)
                _run(self.shell, cell, self.shell.user_ns)
        finally:
            self.shell.user_ns[out] = next(iter(contexts.values())) if len(contexts) == 1 else contexts


@functools.lru_cache(maxsize=128)
def _options(line: str) -> dict[str, Any]:
    """The parsed options of a magic line; a notebook runs the same lines again and again.

    Shared between the cells that use the line, so lists become tuples.
    """
    parsed = vars(parse_argstring(CaptureMagics.capture_intermediates, line))
    return {k: tuple(v) if isinstance(v, list) else v for k, v in parsed.items()}


@contextlib.contextmanager
def _bound(namespace: dict[str, Any], values: dict[str, Any]):
    """Binds names in the namespace for the block, then binds them back.

    A name the block itself rebound keeps the block's value.
    """
    saved = {name: namespace[name] for name in values}
    namespace.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if namespace.get(name) is values[name]:
                namespace[name] = value


def _for_each(models: dict[str, Any], make: Any) -> dict[str, Any]:
    """``make(model)`` for every model, with bad arguments as UsageErrors."""
    try:
        return {name: make(model) for name, model in models.items()}
    except (TypeError, ValueError) as e:
        raise UsageError(f"%%capture_intermediates: {e}") from None


def load(shell: Any) -> None:
    """Registers the magics on an IPython shell (``%load_ext jaxcapture_nb``)."""
    shell.register_magics(CaptureMagics)


def unload(shell: Any) -> None:
    """Removes the magics again (``%unload_ext jaxcapture_nb``)."""
    shell.magics_manager.magics["cell"].pop("capture_intermediates", None)
