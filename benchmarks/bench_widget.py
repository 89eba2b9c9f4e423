"""CaptureView of 1,000 sites: time from display to the ready marker in headless
Chromium (target: at most 500 ms), beside the time treescope takes to render the
same nnx.State to HTML.

"Display" is the moment the notebook's output area appears for the widget's
display message; "ready" is when the widget has drawn its rows and set its
ready marker.
"""

import pathlib
import statistics
import sys
import tempfile
import time

import nbformat

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "browser"))
from lab import CHROMIUM, CHROMIUM_ARGS, THOUSAND_SITES, jupyter_lab, open_and_run  # noqa: E402

WATCH = """() => {
  window.__times = {};
  // Installed once the document exists: an init script runs before it does.
  document.addEventListener("DOMContentLoaded", () => new MutationObserver((_, observer) => {
    const t = window.__times;
    // The setup cell prints nothing: the first output is the widget's.
    if (t.shown === undefined && document.querySelector('.jp-OutputArea-output')) t.shown = performance.now();
    if (t.shown !== undefined && document.querySelector('.jcnb-ready')) { t.ready = performance.now(); observer.disconnect(); }
  }).observe(document.body, {childList: true, subtree: true, attributes: true}));
}"""


def widget_times(runs: int = 5) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with tempfile.TemporaryDirectory() as tmp, jupyter_lab(pathlib.Path(tmp)) as (url, token):
        for k in range(runs):
            name = f"bench{k}.ipynb"
            nb = nbformat.v4.new_notebook(
                cells=[nbformat.v4.new_code_cell(THOUSAND_SITES), nbformat.v4.new_code_cell("cap.show()")]
            )
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nbformat.write(nb, pathlib.Path(tmp) / name)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                context.add_init_script(f"({WATCH})()")
                page = open_and_run(context, url, token, name)
                page.wait_for_selector(".jcnb-ready", timeout=180_000)
                t = page.evaluate("() => window.__times")
                times.append(t["ready"] - t["shown"])
                browser.close()
    return times


def treescope_times(runs: int = 5) -> list[float]:
    import treescope

    namespace: dict = {}
    exec(THOUSAND_SITES, namespace)  # noqa: S102 - the benchmark's own setup code
    state = namespace["cap"].state
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        treescope.render_to_html(state)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main():
    widget = statistics.median(widget_times())
    tree = statistics.median(treescope_times())
    print(f"CaptureView, 1,000 sites, display -> ready marker: {widget:8.1f} ms (target <= 500 ms)")
    print(f"treescope.render_to_html of the same nnx.State:    {tree:8.1f} ms")
    print(f"treescope / CaptureView: {tree / widget:.1f}x")


if __name__ == "__main__":
    main()
