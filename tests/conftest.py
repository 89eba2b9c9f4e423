"""Shared fixtures: small real Flax models, NNX and Linen."""

import atexit
import os
import shutil
import subprocess
import tempfile

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from models import ConvNet, LinenNet, Stack

# Strict JAX: silent rank promotion hides shape bugs.
jax.config.update("jax_numpy_rank_promotion", "raise")

# Compiled summary programs are kept for this run only (the processes and
# kernels it starts share them), not in the user's cache folder.
os.environ["JAXCAPTURE_NB_CACHE_DIR"] = _programs = tempfile.mkdtemp(prefix="jaxcapture-programs-")
atexit.register(shutil.rmtree, _programs, ignore_errors=True)


@pytest.fixture
def convnet():
    return ConvNet(nnx.Rngs(0))


@pytest.fixture
def images():
    return jax.random.normal(jax.random.key(1), (2, 8, 8, 1))


@pytest.fixture
def stack():
    return Stack(depth=3, width=6, rngs=nnx.Rngs(0))


@pytest.fixture
def linen_net():
    module = LinenNet()
    variables = module.init(jax.random.key(0), jnp.ones((1, 4)))
    return module, variables


@pytest.fixture
def ipython():
    """An IPython shell with the extension loaded, as in a notebook (no kernel)."""
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "jaxcapture_nb")
    yield shell
    shell.run_line_magic("unload_ext", "jaxcapture_nb")
    shell.user_ns.pop("_capture", None)


@pytest.fixture
def small_disk(tmp_path):
    """Mounts a real tmpfs of the given size (``small_disk("64k")``) and returns its folder.

    Faults such as a full disk are tested where they happen, in the kernel's
    writes, not by replacing a function. Mounting needs root: elsewhere the
    test is skipped, saying why.
    """
    mounted = []

    def mount(size: str):
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=True)
