"""Summary programs kept on disk: loaded by the next process, recompiled when damaged, never a failure."""

import os
import pathlib
import re
import subprocess
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcapture_nb.stats import program_cache
from jaxcapture_nb.stats.batch import device_layout, packed_rows, padded_table


def table_and_layout(n: int = 3):
    values = [jnp.asarray(np.random.default_rng(k).normal(size=500 + k).astype(np.float32)) for k in range(n)]
    return padded_table(values), device_layout(tuple(v.size for v in values))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    # An earlier test's summary program may still be compiling on a thread,
    # which would keep it in this test's folder when done.
    for thread in threading.enumerate():
        if thread.name in ("jaxcapture-compile", "jaxcapture-optimize"):
            thread.join()
    monkeypatch.setenv("JAXCAPTURE_NB_CACHE_DIR", str(tmp_path / "programs"))
    return tmp_path / "programs"


class Compiles:
    """``packed_rows``, counting how often it is lowered to be compiled."""

    def __init__(self):
        self.count = 0

    def lower(self, *args, **static):
        self.count += 1
        return packed_rows.jitted.lower(*args, **static)


def load_or_compile(table, layout, bins: int = 8, compiles: Compiles | None = None):
    jitted = compiles if compiles is not None else packed_rows.jitted
    return program_cache.load_or_compile("packed_rows", jitted, (table, layout), bins=bins, statistics=())


def test_a_kept_program_is_loaded_not_compiled_and_gives_the_same_rows(folder):
    table, layout = table_and_layout()
    want = np.asarray(packed_rows(table, layout, bins=8))
    compiles = Compiles()
    first = load_or_compile(table, layout, compiles=compiles)
    files = sorted(folder.iterdir())
    assert len(files) == 1, files
    (kept,) = files
    second = load_or_compile(table, layout, compiles=compiles)
    assert compiles.count == 1
    assert kept.name.startswith("packed_rows-") and kept.read_bytes().startswith(program_cache.MAGIC)
    np.testing.assert_array_equal(np.asarray(first(table, layout)), want)
    np.testing.assert_array_equal(np.asarray(second(table, layout)), want)


def test_compiler_options_this_xla_does_not_know_are_left_out_and_the_rest_kept_apart(folder):
    table, layout = table_and_layout()
    options = {"xla_no_such_option_anywhere": True, "xla_backend_optimization_level": 0}
    program = program_cache.load_or_compile(
        "packed_rows", packed_rows.jitted, (table, layout), options, bins=8, statistics=()
    )
    np.testing.assert_array_equal(np.asarray(program(table, layout)), packed_rows(table, layout, bins=8))
    load_or_compile(table, layout)
    assert len(list(folder.iterdir())) == 2  # a build with options is not the default one
    with pytest.raises(Exception, match="xla_backend_optimization_level"):  # a bad value still fails
        program_cache.load_or_compile(
            "packed_rows",
            packed_rows.jitted,
            (table, layout),
            {"xla_backend_optimization_level": "fast"},
            bins=8,
            statistics=(),
        )


def test_programs_for_other_sizes_or_bins_are_kept_apart(folder):
    table, layout = table_and_layout()
    load_or_compile(table, layout, bins=8)
    load_or_compile(table, layout, bins=16)
    load_or_compile(*table_and_layout(70))  # more values: more slots in the layout
    assert len(list(folder.iterdir())) == 3


@pytest.mark.parametrize("damage", ["flipped bytes", "cut short", "another program's file"])
def test_a_damaged_file_is_compiled_again_and_replaced(folder, damage):
    table, layout = table_and_layout()
    load_or_compile(table, layout)
    (kept,) = folder.iterdir()
    data = kept.read_bytes()
    if damage == "flipped bytes":
        middle = len(data) // 2
        kept.write_bytes(
            data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64]) + data[middle + 64 :]
        )
    elif damage == "cut short":
        kept.write_bytes(data[: len(data) // 3])
    else:
        (kept.parent / "packed_rows-other.jaxexe").write_bytes(data)
        kept.write_bytes(data.replace(kept.name.encode(), b"packed_rows-other.jaxexe", 1))
    compiles = Compiles()
    program = load_or_compile(table, layout, compiles=compiles)
    assert compiles.count == 1
    np.testing.assert_array_equal(
        np.asarray(program(table, layout)), np.asarray(packed_rows(table, layout, bins=8))
    )
    assert kept.read_bytes() == data  # replaced by a good copy


def test_an_empty_setting_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCAPTURE_NB_CACHE_DIR", "")
    monkeypatch.chdir(tmp_path)
    table, layout = table_and_layout()
    program = load_or_compile(table, layout)
    np.testing.assert_array_equal(
        np.asarray(program(table, layout)), np.asarray(packed_rows(table, layout, bins=8))
    )
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_costs_the_compile_and_leaves_no_partial_file(small_disk, monkeypatch):
    folder = small_disk("64k") / "programs"  # too small for a program (about half a megabyte)
    monkeypatch.setenv("JAXCAPTURE_NB_CACHE_DIR", str(folder))
    table, layout = table_and_layout()
    program = load_or_compile(table, layout)
    np.testing.assert_array_equal(
        np.asarray(program(table, layout)), np.asarray(packed_rows(table, layout, bins=8))
    )
    assert list(folder.iterdir()) == []


def test_sharded_or_traced_tables_are_left_to_jit():
    table, layout = table_and_layout()
    assert program_cache.usable((table, layout))
    assert not jax.jit(lambda t: program_cache.usable((t, layout)))(table)
    assert not program_cache.usable((np.zeros(3), layout))


CAPTURE = r"""
import logging, sys
import jax
from flax import nnx
from jaxcapture_nb import capture
logging.basicConfig(level=logging.WARNING)
jax.config.update("jax_log_compiles", True)

class SquareLinear(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear({width}, {width}, rngs=rngs)

    def __call__(self, x):
        self.sow(nnx.Intermediate, "hidden", h := self.hidden(x))
        return h

model = SquareLinear(nnx.Rngs(0))
with capture(model, keep="summary") as cap:
    nnx.jit(lambda m, x: m(x))(model, jax.numpy.ones((2, {width})))
print(cap.table())
"""


def test_a_second_process_captures_without_compiling_the_summaries(tmp_path):
    width = 37
    env = {**os.environ, "JAXCAPTURE_NB_CACHE_DIR": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    script = CAPTURE.format(width=width)
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = runs
    assert "compilation of jit(_packed_rows)" in first.stderr
    assert "compilation of jit(_packed_rows)" not in second.stderr
    assert first.stdout == second.stdout and "Intermediate" in first.stdout


def test_kept_programs_go_stale_with_every_module_they_are_traced_from():
    """A change to a module the summary program's code comes from must make every kept program stale."""
    package = pathlib.Path(program_cache.__file__).parent
    traced = {"batch.py"}
    for name in ("batch.py", "bins.py", "passes.py", "float32.py", "histogram.py"):
        text = (package / name).read_text()
        traced |= {f"{m}.py" for m in re.findall(r"^from jaxcapture_nb\.(_\w+) import", text, re.MULTILINE)}
    assert traced <= set(program_cache.PROGRAM_SOURCES)
