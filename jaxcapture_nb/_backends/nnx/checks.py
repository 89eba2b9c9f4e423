"""What a capture checks before it starts on an NNX model."""

from __future__ import annotations

from typing import Any

import flax

from jaxcapture_nb._warnings import warn


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
