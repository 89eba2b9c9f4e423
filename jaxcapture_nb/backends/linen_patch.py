"""How a patch reaches a Flax Linen module: ``nn.intercept_methods``, for the length of the block.

Linen calls every method of a bound module through the interceptors on its
stack, so the block's interceptor sees each method's output as the module
computes it and hands it on patched where a site asks for it. A Linen
``sow`` returns nothing and its ``perturb`` is no method, so a Linen site
is a method's output (``Block_0.__call__``, or ``Block_0.__call__[1]`` for a
leaf of a returned tuple), named as ``capture(module, methods=True)``
names it. Calls of other modules, and of copies of the module with other
attributes, pass untouched.

The interceptor runs as ``apply`` runs. Eagerly that is every call, and
the replacements' arrays are read from the block. Inside ``jax.jit`` it runs
once, while the function is traced: arrays read from the block would be
compiled into the function as constants, and a call after the block would
still use them. So under a trace the arrays must come in through the
variables: :meth:`LinenPatch.variables` adds them as one collection
(:data:`COLLECTION`), keyed by the patches' specs, so that ``jax.jit``
traces a function once per set of patched sites (the keys are part of the
variables' structure) and takes new values as arguments. A patch under a
trace without that collection refuses to run, and says how to add it.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import jax
from flax import linen as nn

from jaxcapture_nb.backends.replacing import METHOD, SiteSpec, replaced_output
from jaxcapture_nb.upstream.jax_internals import is_tracer

# A site: the module path and method, then the leaf of its output, if any.
_SITE = re.compile(r"^([^\[]+?)((?:\[.*)?)$")
# The variables collection that carries the patches' arrays into a trace.
COLLECTION = "jaxcapture_nb_patch"
# A number per replacement function seen, for the collection's keys; held,
# so that a number never stands for two functions.
_FUNCTIONS: dict[Any, int] = {}
# Patches a trace reached, by (module's id, collection key): a function
# compiled in an earlier block applies them without tracing again.
_TRACED: set[tuple[int, str]] = set()


def _key(spec: SiteSpec) -> str:
    """The collection key of a patch: its site, part and function, all of what a compiled function depends on.

    Example:
      >>> _key(linen_spec("Dense_0.__call__", None, abs, False)) == _key(linen_spec("Dense_0.__call__", None, abs, False))
      True
    """
    number = _FUNCTIONS.setdefault(spec.fn, len(_FUNCTIONS))
    return f"{spec.site} index={spec.index!r} sliced={spec.sliced} fn={number}"


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
        self.called: dict[str, None] = {}  # the method sites the block ran, once each, for messages
        self._roots: dict[int, tuple[nn.Module, bool]] = {}
        self._context: Any = None

    def install(self) -> None:
        self._context = nn.intercept_methods(self._intercept)
        self._context.__enter__()

    def uninstall(self) -> None:
        context, self._context = self._context, None
        if context is not None:
            context.__exit__(None, None, None)

    def variables(self, variables: Any) -> dict[str, Any]:
        """``variables`` with the patches' arrays added as the collection :data:`COLLECTION`, for a compiled ``apply``."""
        return {**variables, COLLECTION: {_key(spec): operands for spec, operands in self.patches}}

    def unreached_message(self) -> str | None:
        """What to tell a user whose block never reached some patched sites, or None."""
        missing = [
            spec.site
            for spec, _ in self.patches
            if spec.site not in self.reached and (id(self.module), _key(spec)) not in _TRACED
        ]
        if not missing:
            return None
        if not self.called:
            return (
                f"the block never reached the patched site(s) {', '.join(map(repr, missing))}: "
                f"it never called {type(self.module).__name__}.apply"
            )
        near = {s: difflib.get_close_matches(s, self.called, n=3, cutoff=0.5) for s in missing}
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
        self.called.setdefault(name)
        mine = [(spec, operands) for spec, operands in self.patches if spec.name == name]
        if not mine:
            return out
        root = context.module.scope.root
        if root.has_variable(COLLECTION, _key(mine[0][0])):  # the arrays came in as variables
            mine = [(spec, root.get_variable(COLLECTION, _key(spec))) for spec, _ in mine]
            if any(is_tracer(leaf) for leaf in jax.tree.leaves(out)):
                _TRACED.update((id(self.module), _key(spec)) for spec, _ in mine)
        elif any(is_tracer(leaf) for leaf in jax.tree.leaves((out, args, kwargs))):
            raise RuntimeError(
                f"{mine[0][0].site!r}: under jax.jit (or another JAX transformation) a Linen "
                "patch's arrays must enter as variables, or they would be compiled into the "
                "function and outlive the block: `with patch(module, ...) as p: "
                "step(p.variables(variables), x)`"
            )
        out = replaced_output(name, out, mine)
        self.reached.update(spec.site for spec, _ in mine)
        return out
