"""Every ```python block of the README runs as written, top to bottom.

The blocks run in one namespace, in order, in a plain ``python`` process (later
blocks use names from earlier ones), as a reader pasting them into a script
would run them. A failure names the block by its number and shows the error.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

# Runs the blocks handed to it as JSON on stdin; the package's own warnings are errors.
RUNNER = textwrap.dedent(
    """
    import json, sys, traceback, warnings

    import jaxcapture_nb

    warnings.simplefilter("error", jaxcapture_nb.JaxCaptureWarning)
    namespace = {"__name__": "__main__"}
    for number, code in enumerate(json.load(sys.stdin), start=1):
        try:
            exec(compile(code, f"<README python block {number}>", "exec"), namespace)
        except BaseException:
            print(f"README python block {number} failed:", file=sys.stderr)
            traceback.print_exc()
            sys.exit(1)
    """
)


def blocks(language: str) -> list[str]:
    """The code of the README's fenced blocks in ``language``, in order."""
    return [code for lang, code in FENCE.findall(README.read_text()) if lang == language]


def test_the_readme_has_python_blocks_and_no_magic_or_shell_among_them():
    python = blocks("python")
    assert len(python) >= 4
    for number, code in enumerate(python, start=1):
        assert not re.search(r"^\s*[%!]", code, re.MULTILINE), f"block {number} is not plain Python"


def test_every_python_block_runs_in_order(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(blocks("python")),
        cwd=tmp_path,
        env=dict(os.environ, JAX_PLATFORMS="cpu", MPLBACKEND="Agg"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-5000:]
