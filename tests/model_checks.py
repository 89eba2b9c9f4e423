"""What a capture may leave on a model once its block has ended: nothing."""

from flax import nnx


def has_captures(model) -> bool:
    """Whether anything of a capture is left on the model or its classes.

    A capture adds one exit to the root module, marks each module's
    ``_pytree__nodes`` mapping, and gives the modules' classes a
    ``__captures__`` attribute; ``nnx.capture`` leaves ``__captures__`` on
    modules when its function raises.
    """
    for _, module in nnx.iter_modules(model):
        marks = [
            key for key in vars(module).get("_pytree__nodes", {}) if str(key).startswith("~jaxcapture_nb")
        ]
        if marks or "__captures__" in vars(module) or "__captures__" in vars(type(module)):
            return True
        if any(str(name).startswith("~jaxcapture_nb") for name in vars(module)):
            return True
    return False
