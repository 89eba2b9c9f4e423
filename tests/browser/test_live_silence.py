"""LiveView tells a run whose kernel went silent from a run that is still going, in a real JupyterLab."""

from page_checks import screenshot

# A run of 3000 steps of 50 ms, beating every 0.2 s; the view calls the
# kernel silent after 60 s without a word (the defaults are 5 s and 30 s),
# unless JupyterLab says the kernel restarted: then at once.
LONG_RUN = """
import time
import jax.numpy as jnp
from flax import nnx
from jaxcapture_nb import watch
from jaxcapture_nb.views import live_view

live_view.BEAT_SECONDS, live_view.SILENCE_SECONDS = 0.2, 60.0

class Tiny(nnx.Module):
    def __call__(self, x):
        self.sow(nnx.Intermediate, "h", x)
        return x

model = Tiny()
with watch(model, total=3000) as w:
    for step in range(3000):
        model(jnp.ones(4) * step)
        w.log(step=step, loss=1.0 / (step + 1))
        time.sleep(0.05)  # the time a training step takes
"""


def test_a_view_whose_kernel_restarts_mid_run_says_it_hears_nothing_more(open_notebook):
    page = open_notebook("silent.ipynb", [LONG_RUN])
    view = page.locator(".jcnb-live").first
    progress = view.locator(".jcnb-live-progress")
    progress.filter(has_text="ETA").wait_for(timeout=180_000)
    assert view.get_attribute("data-silent") == "false"
    # A restart leaves the view no way to hear the run has ended.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    # JupyterLab says the kernel restarted: the view says the run stopped,
    # and drops its ETA, within seconds, long before its 60 s of silence.
    page.wait_for_selector(".jcnb-live[data-silent='true']", timeout=10_000)
    said = view.locator(".jcnb-live-silence").text_content()
    assert said.startswith("the kernel restarted or shut down: the run stopped after "), said
    assert "ETA" not in progress.text_content()  # a stopped run's ETA estimates nothing
    view.scroll_into_view_if_needed()
    screenshot(page, "live_view_silent_kernel")
