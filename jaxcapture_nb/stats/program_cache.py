"""Compiled summary programs kept on disk, so that a new process loads them instead of compiling.

The summary program (:func:`batch.packed_rows`) takes about a second to
compile on a CPU, once per process and table size: most of what the first
capture or watch of a new kernel waits for beyond the model's own compile.
Its executables are few (tables come in a few sizes) and depend only on the
table's size, the bins and the JAX that compiled them, so they are kept in
a folder and loaded in tens of milliseconds by the next process.

The folder is ``$JAXCAPTURE_NB_CACHE_DIR`` if set (empty: keep nothing),
else ``jaxcapture_nb`` under ``$XDG_CACHE_HOME`` or ``~/.cache``. A file is
named by everything that makes it valid (the program's source, JAX and
jaxlib, the device kind, the table's size); a file that is damaged or made
for something else is compiled again and replaced. A folder that cannot be
written (a full disk, a read-only home) costs the compile and nothing else.
As with JAX's own compilation cache, the folder is trusted: loading an
executable can run what it holds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pathlib
import re
import tempfile
from typing import Any

import jax
import jaxlib
from jax.experimental import serialize_executable

from jaxcapture_nb.upstream.jax_internals import is_traced

MAGIC = b"jaxcapture_nb compiled program 1\n"
# The modules whose code the summary program is traced from: a change to
# any of them makes every kept program stale.
PROGRAM_SOURCES = (
    "batch.py",
    "float32.py",
    "histogram.py",
    "bins.py",
    "integers.py",
    "passes.py",
    "reduced.py",
    "summarize.py",
    "summary.py",
)


def cache_dir() -> pathlib.Path | None:
    """The folder compiled programs are kept in, or None when ``JAXCAPTURE_NB_CACHE_DIR`` is empty.

    Example:
      >>> import os
      >>> os.environ["JAXCAPTURE_NB_CACHE_DIR"] = "/tmp/programs"
      >>> cache_dir()
      PosixPath('/tmp/programs')
      >>> os.environ["JAXCAPTURE_NB_CACHE_DIR"] = ""
      >>> cache_dir() is None
      True
      >>> del os.environ["JAXCAPTURE_NB_CACHE_DIR"]
    """
    chosen = os.environ.get("JAXCAPTURE_NB_CACHE_DIR")
    if chosen is not None:
        return pathlib.Path(chosen) if chosen else None
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(home) / "jaxcapture_nb"


@functools.cache
def _source_digest() -> str:
    """A digest of the summary program's source files."""
    digest = hashlib.sha256()
    here = pathlib.Path(__file__).parent
    for name in PROGRAM_SOURCES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


def program_key(name: str, args: tuple[Any, ...], static: tuple[Any, ...]) -> str:
    """The file name of program ``name`` compiled for ``args`` (arrays, as a pytree) and ``static`` settings.

    Everything that changes the executable is in it: the program's source,
    JAX and jaxlib, the device, x64, and the arguments' structure, shapes
    and types.
    """
    device = jax.devices()[0]
    leaves, tree = jax.tree.flatten(args)
    described = (
        name,
        _source_digest(),
        jax.__version__,
        jaxlib.__version__,
        device.platform,
        device.client.platform_version,
        device.device_kind,
        jax.device_count(),
        str(jax.dtypes.canonicalize_dtype(float)),  # float64 under x64
        str(tree),
        tuple((leaf.shape, str(leaf.dtype)) for leaf in leaves),
        static,
    )
    return f"{name}-{hashlib.sha256(repr(described).encode()).hexdigest()[:32]}.jaxexe"


def usable(args: tuple[Any, ...]) -> bool:
    """Whether a kept program can run on ``args``: one process, every array on the default device.

    Sharded arrays and programs of several processes compile as JAX
    decides, through ``jax.jit``.
    """
    if jax.process_count() != 1:
        return False
    leaves = jax.tree.leaves(args)
    if is_traced(leaves):
        return False
    default = jax.devices()[0]
    return all(isinstance(leaf, jax.Array) and leaf.devices() == {default} for leaf in leaves)


def load_or_compile(
    name: str, jitted: Any, args: tuple[Any, ...], options: dict[str, Any] | None = None, **static: Any
) -> Any:
    """``jitted`` (a ``jax.jit`` function) compiled for ``args``, which :func:`usable` accepts: loaded if kept, else compiled and kept.

    ``options`` are XLA's compiler options; one this XLA does not know is
    left out. The result is called with ``args``' arrays, not
    ``static``.
    """
    loaded = load_kept(name, args, options, **static)
    if loaded is not None:
        return loaded
    return compile_and_keep(name, jitted.lower(*args, **static), args, options, **static)


def load_kept(name: str, args: tuple[Any, ...], options: dict[str, Any] | None = None, **static: Any) -> Any:
    """The program :func:`load_or_compile` keeps for these arguments, if it kept one; else None."""
    folder = cache_dir()
    if folder is None:
        return None
    return _load(folder / _file_name(name, args, options, static), args)


def compile_and_keep(
    name: str, lowered: Any, args: tuple[Any, ...], options: dict[str, Any] | None = None, **static: Any
) -> Any:
    """Compiles ``lowered`` (``jitted.lower(*args, **static)``) with ``options`` and keeps it as :func:`load_or_compile` does."""
    compiled = _compiled(lowered, dict(options or {}))
    folder = cache_dir()
    if folder is not None:
        _keep(folder / _file_name(name, args, options, static), compiled)
    return compiled


def _compiled(lowered: Any, options: dict[str, Any]) -> Any:
    """``lowered`` compiled with the ``options`` this XLA knows.

    jaxlib 0.12.0.1 refuses ``xla_cpu_use_fusion_emitters`` ("No such
    compile option"), a field its XLA's DebugOptions now reserves; jaxlib
    0.10.2 takes it.
    """
    while options:
        try:
            return lowered.compile(compiler_options=options)
        except Exception as e:  # noqa: BLE001 - XLA raises its own runtime error type
            unknown = re.search(r"No such compile option: '([^']+)'", str(e))
            if unknown is None or unknown.group(1) not in options:
                raise
            del options[unknown.group(1)]
    return lowered.compile()


def _file_name(
    name: str, args: tuple[Any, ...], options: dict[str, Any] | None, static: dict[str, Any]
) -> str:
    return program_key(name, args, (*sorted(static.items()), *sorted((options or {}).items())))


def _load(path: pathlib.Path, args: tuple[Any, ...]) -> Any:
    """The executable kept at ``path``; None if there is none, or it is damaged or not this program."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = MAGIC + path.name.encode() + b"\n"
    if not data.startswith(header):
        return None
    in_tree = jax.tree.structure((args, {}))
    try:
        return serialize_executable.deserialize_and_load(data[len(header) :], in_tree, jax.tree.structure(0))
    except Exception:  # noqa: BLE001 - a damaged file is compiled again, whatever failed
        return None


def _keep(path: pathlib.Path, compiled: Any) -> None:
    """Writes ``compiled`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    try:
        payload, _, _ = serialize_executable.serialize(compiled)
    except Exception:  # noqa: BLE001 - a backend that cannot serialize keeps nothing
        return
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".writing-", delete=False) as file:
            temporary = file.name
            file.write(MAGIC + path.name.encode() + b"\n" + payload)
        os.replace(temporary, path)
        temporary = None
    except OSError:
        pass  # a full disk or a read-only folder: the next process compiles again
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
