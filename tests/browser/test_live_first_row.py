"""LiveView shows the first recorded row as soon as the kernel has it, in every view of it."""

from page_checks import screenshot
from test_live_view import SETUP

# Records steps 0, 50 and 100 of 120, then shows the view a second time (as
# watch sends its output again for the notebook's saved picture) and holds
# the run open until the test creates `stop-first-row`. The start-up window
# in which every update carries all rows is closed: every update after the
# widget's first carries only new rows, as on a run whose first step
# compiles for longer than that window.
FIRST_ROW = """
import os, time
from IPython.display import display
from jaxcapture_nb.views import live_view

live_view.BASE_SECONDS = 0.0
with watch(model, every=50, total=120) as w:
    for step in range(120):
        w.log(step=step, loss=mse_train_step(model, optimizer, x, y))
    print("trained", step + 1)
    display(w.view)
    while not os.path.exists("stop-first-row"):
        time.sleep(0.05)
"""

VIEWS = "document.querySelectorAll('.jcnb-live[data-ready=true]')"


def test_every_view_shows_the_rows_recorded_so_far_while_the_run_goes_on(lab, open_notebook):
    _, _, root = lab
    (root / "stop-first-row").unlink(missing_ok=True)
    page = open_notebook("live_first_row.ipynb", [SETUP, FIRST_ROW])
    try:
        page.wait_for_selector("text=/^trained 120/", timeout=180_000)
        page.wait_for_function(f"() => {VIEWS}.length === 2", timeout=60_000)
        # Each view, the first and the one shown later, draws the three rows
        # recorded (steps 0, 50 and 100) while the run still goes on.
        page.wait_for_function(
            f"() => [...{VIEWS}].every((v) => v.querySelector('canvas.jcnb-live-over')?.dataset.drawn === '3')",
            timeout=60_000,
        )
        for k in range(2):
            view = page.locator(".jcnb-live[data-ready=true]").nth(k)
            assert view.get_attribute("data-done") == "false"
            assert view.get_attribute("data-compiling") == "false"
            assert view.get_attribute("data-seen") == "120"
            assert not view.locator(".jcnb-live-waiting").is_visible()
            assert "waiting for the first recorded step" not in view.inner_text()
            assert view.locator(".jcnb-live-card").count() == 2
        page.locator(".jcnb-live[data-ready=true]").nth(1).scroll_into_view_if_needed()
        screenshot(page, "live_view_shown_again")
    finally:
        (root / "stop-first-row").touch()
    page.wait_for_function(f"() => [...{VIEWS}].some((v) => v.dataset.done === 'true')", timeout=120_000)
