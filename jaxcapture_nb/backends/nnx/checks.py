"""What a capture checks on an NNX model, before it starts and as steps are traced."""

from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from types import FrameType
from typing import Any

import flax
import jax

from jaxcapture_nb.core.user_warnings import PACKAGE_DIR, JaxCaptureWarning, warn

_LIBRARIES = tuple(os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep for m in (jax, flax))
_NOT_USER_CODE = (*_LIBRARIES, PACKAGE_DIR, sysconfig.get_paths()["stdlib"] + os.sep)


def warn_sowed_attributes(modules: list[tuple[tuple[Any, ...], Any]], var_types: tuple[type, ...]) -> None:
    """Warns, once, when a module already holds values that ``Module.sow`` stored outside a capture."""
    # Flax 0.12.11 added a flag that makes sow and perturb do nothing outside a capture
    # (flax/configurations.py's nnx_sow_capture_noop; 0.12.10 has none).
    noop_hint = (
        "; flax.config.update('nnx_sow_capture_noop', True) makes Module.sow outside a capture store nothing."
        if hasattr(flax.config, "nnx_sow_capture_noop")
        else "."
    )
    for path, module in modules:
        for attr, value in vars(module).items():
            if type(value) in var_types:
                where = ".".join(str(p) for p in (*path, attr))
                warn(
                    f"'{where}' holds values stored by Module.sow called outside a capture. Such "
                    "values grow by one entry per call, which makes nnx.jit re-trace and "
                    "recompile a step on every call (often ~10x slower). Remove them with "
                    f"nnx.pop(model, nnx.{type(value).__name__}) and sow inside "
                    "jaxcapture_nb.capture(model) instead" + noop_hint
                )
                return


def already_captured_message(path: tuple[Any, ...]) -> str:
    where = ".".join(str(p) for p in path) or "the model"
    return (
        f"{where} is already being captured by another active capture(). A module can be "
        "captured by one capture at a time: end the other `with capture(...)` block first, or "
        "capture both models' sites in one capture(model) of their common parent."
    )


def leftover_message(path: tuple[Any, ...]) -> str:
    where = ".".join(str(p) for p in path) or "the model"
    return (
        f"{where} has a leftover `__captures__` attribute, which flax.nnx.capture leaves behind "
        "when the function it wraps raises; later sow() calls would silently accumulate into it. "
        "Remove it from every submodule before capturing:\n"
        "    for _, m in nnx.iter_modules(model):\n"
        "        vars(m).pop('__captures__', None)"
    )


def lost_messages(
    in_shards: dict[str, tuple[str, ...]], received: int, delivered: int, strangers: dict[str, int]
) -> list[str]:
    """Why values a model sowed were not recorded, one sentence each (none when all were).

    Args:
      in_shards: the sites sowed inside a ``shard_map`` body, with its mesh axes.
      received: values the recorder took from sows inside compiled code.
      delivered: deliveries handed to the recorder.
      strangers: per class of the model, values sowed by modules of it that
        are not the model's; named only when the model itself recorded nothing.
    """
    lost = []
    if in_shards:
        sites = ", ".join(in_shards)
        axes = ", ".join(sorted({axis for axes in in_shards.values() for axis in axes}))
        lost.append(
            f"{sites} sowed inside a shard_map body (mesh axes {axes}), where each device holds only "
            "its own shard of a value, so they were not recorded. Sow outside the body (return the value "
            "through out_specs and sow it after the shard_map), or let jax.jit partition the step over "
            "arrays sharded with jax.make_mesh, which watch and capture follow"
        )
    if received and not delivered:
        lost.append(
            f"the model sowed {received} values inside compiled code that never ran or whose "
            "outputs were dropped (a function only traced, with jax.eval_shape or .lower(), or a "
            "transform that does not hand back the model's state): nothing was recorded. A jitted "
            "function that merges the model from a split made in the block and returns no state "
            "(forward(graphdef, state, x)) keeps its values when it also returns nnx.state(model), "
            "or when the split is made before the block (they then leave by host callback)"
        )
    if strangers and not delivered:
        names = ", ".join(f"{n} by {name}" for name, n in strangers.items())
        lost.append(
            f"values were sowed by modules of the model's classes that are not part of the model ({names}): "
            "a copy made with copy.deepcopy, or another instance; watch or capture that one too, or make "
            "copies with nnx.clone inside the block"
        )
    return lost


def warn_slow_step() -> None:
    """Warns, at the trace of a compiled step that was made without the watch's exit, what it costs and the fix.

    Called once per watch while the step is traced, at its first call in
    the block: the warning names the user's step function and points at the
    line that called it.
    """
    step, caller = _compiled_step()
    name = f"The step {step.f_code.co_qualname}()" if step is not None else "A compiled step"
    message = (
        f"{name} compiles without a place for the watch's values (it was made from the model before "
        "the `with watch(...)` line, as a cached_partial or an nnx.split, or it is a jax.jit function "
        "that closes over the model), so they leave by host callback and each call waits for them, "
        "several times a plain step's time. Make the step inside the block and pass the model to it "
        "(nnx.jit(step)(model, optimizer, batch)) for the fast path"
    )
    if caller is None:
        warn(message)
        return
    warnings.warn_explicit(
        message,
        JaxCaptureWarning,
        caller.f_code.co_filename,
        caller.f_lineno,
        module=caller.f_globals.get("__name__"),
        registry=caller.f_globals.setdefault("__warningregistry__", {}),
    )


def _compiled_step() -> tuple[FrameType | None, FrameType | None]:
    """The user's function that the outermost compiled call runs, and the user's frame that called it.

    From the outermost frame in, the first frame in JAX or Flax is the call
    of the compiled step; the first user frame inside it is the step.
    """
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()
    for i, frame in enumerate(frames):
        if frame.f_code.co_filename.startswith(_LIBRARIES):
            caller = frames[i - 1] if i else None
            inner = (f for f in frames[i:] if not f.f_code.co_filename.startswith(_NOT_USER_CODE))
            return next(inner, None), caller
    return None, None
