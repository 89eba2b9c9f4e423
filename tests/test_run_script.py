"""scripts/run.sh prints, and opens, the tutorial's own URL rather than JupyterLab's launcher.

The script runs for real, with the repository's JupyterLab, in a copy of the repository's
layout whose environment script only changes directory (the real one installs packages).
The server is stopped as soon as it has printed its URL and asked the browser to open it.
Run as root, as on many containers and CI runners, the script adds JupyterLab's --allow-root
itself; a stand-in `id` and `jupyter` check that it does so only for root.
"""

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).parent.parent
TUTORIALS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
VENV = Path(sys.executable).parent.parent  # the environment running the tests, as run.sh's .venv

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="a bash script"),
    pytest.mark.skipif(not (VENV / "bin" / "jupyter").exists(), reason="JupyterLab is not installed"),
]


@pytest.fixture
def checkout(tmp_path):
    """The script, a stand-in for its environment script, the tutorials' names, and the .venv."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    # The real environment script's shell options, without its installs.
    (tmp_path / "scripts" / "_env.sh").write_text(
        'set -euo pipefail\ncd "$(dirname "${BASH_SOURCE[0]}")/.."\n'
    )
    (tmp_path / "notebooks").mkdir()
    for name in TUTORIALS:
        (tmp_path / "notebooks" / name).write_text("{}")
    (tmp_path / ".venv").symlink_to(VENV)
    return tmp_path


def run_until_opened(checkout: Path, *args: str, timeout: float = 120) -> tuple[str, str]:
    """The URL the server printed and the page it asked the browser to open; then stops it."""
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(checkout / "config"),
        "JUPYTER_RUNTIME_DIR": str(checkout / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    # The "browser" prints what it is asked to open, which the server writes as a redirect page.
    browser = f"{sys.executable} -c 'import sys; print(\"OPEN\", sys.argv[1], flush=True)' %s"
    command = ["bash", "scripts/run.sh", *args, "--ServerApp.port=0", "--ServerApp.ip=127.0.0.1"]
    # No --allow-root: where the tests run as root, the script must add it for the server to start.
    command += [f"--ServerApp.browser={browser}"]
    server = subprocess.Popen(
        command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    # A thread reads the output line by line: waiting on the pipe itself
    # (select) misses lines already read into the file's buffer with an
    # earlier one, such as the browser's line right after the server's.
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_put_lines, args=(server.stdout, lines), daemon=True)
    reader.start()
    printed = opened = None
    output = []
    try:
        deadline = time.monotonic() + timeout
        while (printed is None or opened is None) and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if server.poll() is not None and not reader.is_alive() and lines.empty():
                    break
                continue
            output.append(line)
            if printed is None and (found := re.search(r"http://127\.0\.0\.1:\d+/\S*", line)):
                printed = found.group(0)
            if line.startswith("OPEN "):  # read now: the server deletes the page as it stops
                opened = page_of(line.split(maxsplit=1)[1].strip())
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert printed and opened, "".join(output)
    return printed, opened


def _put_lines(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def page_of(url: str) -> str:
    """What a browser asked to open ``url`` goes to: the server writes a redirect page."""
    return Path(url.removeprefix("file://")).read_text() if url.startswith("file:") else url


@pytest.mark.parametrize(
    ("args", "tutorial"),
    [((), "01_capture_basics.ipynb"), (("03",), "03_training_live.ipynb")],
)
def test_the_printed_and_opened_url_is_the_tutorials(checkout, args, tutorial):
    printed, page = run_until_opened(checkout, *args)
    url = rf"http://127\.0\.0\.1:\d+/lab/tree/notebooks/{re.escape(tutorial)}\?token=\w+"
    assert re.fullmatch(url, printed), printed
    assert re.search(url, page), page


def test_an_unknown_tutorial_is_refused_with_the_list(checkout):
    result = subprocess.run(
        ["bash", "scripts/run.sh", "99"], cwd=checkout, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "no tutorial matches '99'" in result.stderr and TUTORIALS[0] in result.stderr


def stand_in(directory: Path, name: str, body: str) -> None:
    """An executable bash script ``directory/name`` running ``body``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
    (directory / name).chmod(0o755)


@pytest.mark.parametrize(("uid", "allowed"), [(0, True), (1000, False)])
def test_jupyterlab_is_allowed_to_run_as_root_only_for_root(tmp_path, uid, allowed):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    (tmp_path / "scripts" / "_env.sh").write_text(
        'set -euo pipefail\ncd "$(dirname "${BASH_SOURCE[0]}")/.."\n'
    )
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / TUTORIALS[0]).write_text("{}")
    stand_in(tmp_path / "bin", "id", f"echo {uid}")
    stand_in(tmp_path / ".venv" / "bin", "jupyter", 'printf "%s\\n" "$@"')
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "scripts/run.sh", "--no-browser"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    args = result.stdout.splitlines()
    assert args[0] == "lab" and args[-1] == "--no-browser", args
    assert ("--allow-root" in args) == allowed, args
