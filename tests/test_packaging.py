"""The wheel carries the widget's front end, so installing needs no Node.js, and its modules load."""

import importlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from jaxcapture_nb.views import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_wheel_ships_the_widget_front_end(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("jaxcapture_nb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = sorted(p.name for p in (ROOT / "js").iterdir() if p.suffix in (".js", ".css"))
    assert {"common.js", "draw.js", "theme.css", "live_view.js"} <= set(sources)
    for name in sources:
        shipped = zipfile.ZipFile(wheel).read(f"jaxcapture_nb/static/{name}")
        assert shipped == (ROOT / "js" / name).read_bytes()
    bundles = sorted(p.name for p in front_end.BUNDLES.glob("*.js"))
    assert bundles == [
        "attention_view.js",
        "capture_view.js",
        "compare_view.js",
        "lens_view.js",
        "live_view.js",
        "mode_panel.js",
        "patching_view.js",
    ]
    for name in bundles:
        assert (
            zipfile.ZipFile(wheel).read(f"jaxcapture_nb/views/bundles/{name}")
            == (front_end.BUNDLES / name).read_bytes()
        )
    assert not any(n.endswith(".map") or "node_modules" in n for n in names)
    # The Jupyter server extension that saves each view's picture is enabled by the install itself.
    (config,) = [n for n in names if n.endswith("etc/jupyter/jupyter_server_config.d/jaxcapture_nb.json")]
    enabled = json.loads(zipfile.ZipFile(wheel).read(config))["ServerApp"]["jpserver_extensions"]
    assert enabled == {"jaxcapture_nb.jupyter.server_extension": True}


def test_the_front_end_needs_nothing_a_host_may_lack():
    """VS Code, Colab and marimo load the same modules: no host API, no import, no parsed HTML.

    The files import only one another, and the modules the widgets ship, those files bundled,
    import nothing.
    """
    for path in sorted((ROOT / "js").glob("*.js")):
        text = path.read_text()
        for host_only in ("@jupyterlab", "jupyterapp", "require(", "innerHTML", "insertAdjacentHTML"):
            assert host_only not in text, (path.name, host_only)
        lines = [line for line in text.splitlines() if line.startswith("import ")]
        siblings = re.findall(r'^import \{[^}]*\} from "\./([\w.-]+\.js)";', text, re.MULTILINE)
        assert len(siblings) == len(lines), path.name
        assert all((ROOT / "js" / file).exists() for file in siblings), path.name
    for entry in (
        "capture_view.js",
        "live_view.js",
        "compare_view.js",
        "mode_panel.js",
        "patching_view.js",
        "lens_view.js",
    ):
        assert "\nimport " not in front_end.module(entry), entry
    for path in sorted((ROOT / "js").glob("*.css")):
        # A host variable always comes with a fallback: hosts define JupyterLab's or VS Code's, or none.
        bare = re.findall(r"var\(--(?:jp|vscode)-[\w-]+\)", path.read_text())
        assert bare == [], (path.name, bare)


def _node_load(tmp_path, source, probe):
    """What `probe` prints after Node imports `source` as an ES module bound to `m`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed; the wheel does not need it, this check does")
    module = tmp_path / f"module{len(list(tmp_path.iterdir()))}.mjs"
    module.write_text(source)
    script = f"const m = await import({json.dumps(module.as_uri())}); console.log({probe});"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "widget",
    [
        "capture_view.CaptureView",
        "live_view.LiveView",
        "compare_view.CompareView",
        "mode_panel.ModePanel",
        "patching_view.PatchingView",
        "lens_view.LogitLensView",
        "attention_view.AttentionView",
    ],
)
def test_every_widget_module_loads(tmp_path, widget):
    """The module a widget ships, its files bundled, parses and runs its top level."""
    module_name, class_name = widget.split(".")
    cls = getattr(importlib.import_module(f"jaxcapture_nb.views.{module_name}"), class_name)
    # A default export is the widget, or (anywidget's factory, called once per widget) makes it.
    widget = "(typeof m.default === 'function' ? m.default() : m.default)"
    assert _node_load(tmp_path, cls._esm, f"typeof {widget}.render") == "function"


def test_the_bundles_are_what_esbuild_makes_of_the_front_end_now(tmp_path):
    """A change to js/ reaches the widgets only through `npm run build`: a stale bundle fails here."""
    esbuild = ROOT / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists() or shutil.which("node") is None:
        pytest.skip(
            "Node.js and esbuild (npm ci) are not installed; the package does not need them, this check does"
        )
    build = json.loads((ROOT / "package.json").read_text())["scripts"]["build"].split()
    assert build[0] == "esbuild" and "--outdir=jaxcapture_nb/views/bundles" in build
    args = [str(esbuild), *(a for a in build[1:] if not a.startswith("--outdir=")), f"--outdir={tmp_path}"]
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True, timeout=120)
    made = sorted(p.name for p in tmp_path.glob("*.js"))
    assert made == sorted(p.name for p in front_end.BUNDLES.glob("*.js"))
    stale = [
        name for name in made if (tmp_path / name).read_bytes() != (front_end.BUNDLES / name).read_bytes()
    ]
    assert stale == [], f"run `npm run build`: {stale} differ from what esbuild makes of js/"


def test_every_front_end_file_is_in_a_widget_module():
    """A new file no widget imports would ship and never load."""
    sources = [
        front_end.module("capture_view.js"),
        front_end.module("live_view.js"),
        front_end.module("compare_view.js"),
        front_end.module("mode_panel.js"),
        front_end.module("patching_view.js"),
        front_end.module("lens_view.js"),
        front_end.module("attention_view.js"),
    ]
    joined = {
        line[len("// js/") :]
        for source in sources
        for line in source.splitlines()
        if line.startswith("// js/")
    }
    assert joined == {p.name for p in (ROOT / "js").glob("*.js")}
