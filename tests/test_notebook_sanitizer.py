"""The nbval sanitizer masks machine-dependent digits and nothing a tutorial must keep."""

import re
from pathlib import Path

CONFIG = Path(__file__).parent.parent / "notebooks" / "sanitize.cfg"


def sanitize(text: str) -> str:
    """Applies the sanitizer's rules in file order, read the way nbval reads them."""
    rules = re.findall(r"^regex: (.*)$\n^replace: (.*)$", CONFIG.read_text(), flags=re.MULTILINE)
    assert len(rules) == 6
    for regex, replace in rules:
        text = re.sub(regex, replace, text)
    return text


def test_rounding_differences_compare_equal():
    saved = "bn1    __call__  0     (64,8,8,8)  float32  -5.675e-10  1       -4.08  12.9"
    fresh = "bn1    __call__  0     (64,8,8,8)  float32  3.638e-10   1       -4.1   13.0"
    assert sanitize(saved) == sanitize(fresh)


def test_histogram_bars_compare_equal_whatever_bins_are_empty():
    saved = '<svg><rect x="0.00" y="1.5" width="1.25" height="0.5"/></svg>'
    fresh = '<svg><rect x="0.00" y="1.4" width="1.25" height="0.6"/><rect x="2.50" y="1" width="1.25" height="1"/></svg>'
    assert sanitize(saved) == sanitize(fresh)


def test_sparklines_compare_equal_whatever_their_outline():
    saved = '<svg viewBox="0 0 64 16"><path d="M0 16h3V12h1V0h60V16z"/></svg>'
    fresh = '<svg viewBox="0 0 64 16"><path d="M0 16h4V1h60V16z"/></svg>'
    assert sanitize(saved) == sanitize(fresh)
    assert sanitize(saved) != sanitize(saved.replace("64 16", "32 16"))  # the bin count stays


def test_patching_heatmap_cells_compare_equal_whatever_their_colour():
    saved = '<tr><th>layers.0.__call__</th><td style="background:#f7f7f7;color:#000">0.01</td></tr>'
    fresh = '<tr><th>layers.0.__call__</th><td style="background:#f4f4f5;color:#000">0.02</td></tr>'
    assert sanitize(saved) == sanitize(fresh)
    assert sanitize(saved) != sanitize(saved.replace("layers.0", "layers.1"))  # the sites stay
    assert sanitize(saved) != sanitize(saved.replace("</td>", "</td><td>0.5</td>"))  # and the positions


def test_sites_shapes_counts_and_words_still_differ():
    row = "bn1  __call__  0  (64,8,8,8)  float32  0.5  nan/inf: 3"
    for changed in (
        row.replace("bn1", "bn2"),
        row.replace("(64,8,8,8)", "(64,8,8,16)"),
        row.replace("float32", "float16"),
        row.replace("nan/inf: 3", "nan/inf: 4"),
    ):
        assert sanitize(changed) != sanitize(row)


def test_saved_tutorial_outputs_hold_no_warnings_or_machine_paths():
    """A warning printed while a tutorial ran would show readers a traceback and this machine's paths."""
    import json

    for path in sorted((CONFIG.parent).glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                text = "".join(output.get("text", []))
                assert output.get("name") != "stderr", (path.name, text[:200])
                assert not re.search(r"(/work/|/home/|site-packages)", text), (path.name, text[:200])


def test_saved_pngs_compare_equal_whatever_their_pixels():
    saved = '<img alt="attention patterns: 2 layers" src="data:image/png;base64,iVBORw0KGgoAAA+/=">'
    fresh = '<img alt="attention patterns: 2 layers" src="data:image/png;base64,iVBORw0KGgoBBB9">'
    assert sanitize(saved) == sanitize(fresh)
    assert sanitize(saved) != sanitize(saved.replace("2 layers", "3 layers"))
