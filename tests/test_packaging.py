"""The wheel carries the widget's front end, so installing needs no Node.js."""

import pathlib
import re
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_wheel_ships_the_widget_front_end(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("jaxcapture_nb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    front_end = sorted(p.name for p in (ROOT / "js").iterdir() if p.suffix in (".js", ".css"))
    assert {"common.js", "draw.js", "theme.css", "live_view.js"} <= set(front_end)
    for name in front_end:
        shipped = zipfile.ZipFile(wheel).read(f"jaxcapture_nb/static/{name}")
        assert shipped == (ROOT / "js" / name).read_bytes()
    assert not any(n.endswith(".map") or "node_modules" in n for n in names)


def test_the_front_end_needs_nothing_a_host_may_lack():
    """VS Code, Colab and marimo load the same modules: no host API, no import, no parsed HTML."""
    for path in sorted((ROOT / "js").glob("*.js")):
        text = path.read_text()
        for host_only in ("@jupyterlab", "jupyterapp", "require(", "innerHTML", "insertAdjacentHTML"):
            assert host_only not in text, (path.name, host_only)
        assert not any(line.startswith("import ") for line in text.splitlines()), path.name
    for path in sorted((ROOT / "js").glob("*.css")):
        # A host variable always comes with a fallback: hosts define JupyterLab's or VS Code's, or none.
        bare = re.findall(r"var\(--(?:jp|vscode)-[\w-]+\)", path.read_text())
        assert bare == [], (path.name, bare)
