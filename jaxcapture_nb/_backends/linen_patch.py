"""How a patch reaches a Flax Linen module: ``nn.intercept_methods``, for the length of the block.

Linen calls every method of a bound module through the interceptors on its
stack, so the block's interceptor sees each method's output as the module
computes it and hands it on patched where a site asks for it. A Linen
``sow`` returns nothing and its ``perturb`` is no method, so a Linen site
is a method's output (``Block_0.__call__``, or ``Block_0.__call__[1]`` for a
leaf of a returned tuple), named as ``capture(module, methods=True)``
names it. Calls of other modules, and of copies of the module with other
attributes, pass untouched.

The interceptor runs as ``apply`` runs: on every eager call. Inside
``jax.jit`` it would run once, while the function is traced, and the
replacement's arrays would be compiled into the function as constants,
which a call after the block would still use. So a patch of a Linen module
refuses to run under a JAX transformation, and says how to get the same
result.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import jax
from flax import linen as nn

from jaxcapture_nb._backends.replacing import METHOD, SiteSpec, replaced_output
from jaxcapture_nb._tracing import is_tracer

# A site: the module path and method, then the leaf of its output, if any.
_SITE = re.compile(r"^([^\[]+?)((?:\[.*)?)$")


def linen_spec(site: str, index: Any, fn: Any, sliced: bool) -> SiteSpec:
    """The spec of a patch of the Linen site ``site``.

    Example:
      >>> linen_spec("Block_0.__call__[1]", None, None, False)[:4]
      ('Block_0.__call__[1]', 'method', 'Block_0.__call__', '[1]')
    """
    match = _SITE.match(site)
    if match is None:
        raise KeyError(f"{site!r} is not a Linen site: name a method's output, as in 'Block_0.__call__'")
    return SiteSpec(site, METHOD, match.group(1), match.group(2), index, fn, sliced)


class LinenPatch:
    """Replaces method outputs of one Linen module's ``apply`` for the length of a block.

    Args:
      module: the (unbound) Linen module whose ``apply`` calls are patched.
      patches: ``(spec, operands)`` per site, as :func:`linen_spec` and the replacement give them.
    """

    def __init__(self, module: nn.Module, patches: list[tuple[SiteSpec, tuple[Any, ...]]]):
        self.module = module
        self.patches = patches
        self.reached: set[str] = set()
        self.called: list[str] = []  # the method sites the block ran, for messages
        self._roots: dict[int, tuple[nn.Module, bool]] = {}
        self._context: Any = None

    def install(self) -> None:
        self._context = nn.intercept_methods(self._intercept)
        self._context.__enter__()

    def uninstall(self) -> None:
        context, self._context = self._context, None
        if context is not None:
            context.__exit__(None, None, None)

    def unreached_message(self) -> str | None:
        """What to tell a user whose block never reached some patched sites, or None."""
        missing = [spec.site for spec, _ in self.patches if spec.site not in self.reached]
        if not missing:
            return None
        if not self.called:
            return (
                f"the block never reached the patched site(s) {', '.join(map(repr, missing))}: "
                f"it never called {type(self.module).__name__}.apply"
            )
        near = {s: difflib.get_close_matches(s, dict.fromkeys(self.called), n=3, cutoff=0.5) for s in missing}
        listed = "; ".join(f"{s!r}" + (f" (nearest: {', '.join(n)})" if n else "") for s, n in near.items())
        return f"the block never reached the patched site {listed}: no call of that module and method"

    def _ours(self, module: nn.Module) -> bool:
        """Whether a bound module belongs to a call of this module's ``apply``."""
        root = module
        while isinstance(root.parent, nn.Module):
            root = root.parent
        known = self._roots.get(id(root))
        if known is None or known[0] is not root:
            same = root is self.module or root.clone(parent=None, name=None) == self.module
            known = self._roots[id(root)] = (root, same)  # holding root keeps its id its own
        return known[1]

    def _intercept(self, next_fun: Any, args: Any, kwargs: Any, context: Any) -> Any:
        out = next_fun(*args, **kwargs)
        if not self._ours(context.module):
            return out
        name = ".".join((*context.module.path, context.method_name))
        self.called.append(name)
        mine = [(spec, operands) for spec, operands in self.patches if spec.name == name]
        if not mine:
            return out
        if any(is_tracer(leaf) for leaf in jax.tree.leaves((out, args, kwargs))):
            raise RuntimeError(
                f"{mine[0][0].site!r}: a patch of a Linen module runs as apply runs, on an eager "
                "call; under jax.jit (or another JAX transformation) its arrays would be compiled "
                "into the function and stay there after the block. Call model.apply(variables, ...) "
                "outside jax.jit inside `with patch(...)`, or patch an NNX model, whose patches "
                "enter nnx.jit steps as arguments"
            )
        out = replaced_output(name, out, mine)
        self.reached.update(spec.site for spec, _ in mine)
        return out
