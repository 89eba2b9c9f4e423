"""The script-free HTML table of a CaptureView: small per row, well formed, every site named."""

import html
from html.parser import HTMLParser

import jax
import numpy as np
import pytest
from flax import nnx

from jaxcapture_nb import capture
from jaxcapture_nb.stats.records import site_label
from jaxcapture_nb.views.static import bar_heights, sparkline_path


class Layer(nnx.Module):
    """A pre-norm MLP block that sows its activations before and after the nonlinearity."""

    def __init__(self, width, rngs):
        self.norm = nnx.LayerNorm(width, rngs=rngs)
        self.up = nnx.Linear(width, 2 * width, rngs=rngs)
        self.down = nnx.Linear(2 * width, width, rngs=rngs)

    def __call__(self, x):
        h = self.up(self.norm(x))
        self.sow(nnx.Intermediate, "pre_act", h)
        h = nnx.gelu(h)
        self.sow(nnx.Intermediate, "post_act", h)
        return x + self.down(h)


class DeepMLP(nnx.Module):
    def __init__(self, depth, width, rngs):
        self.layers = nnx.List([Layer(width, rngs) for _ in range(depth)])

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Tags(HTMLParser):
    """Counts start tags and checks that every opened element is closed in order."""

    VOID = {"br", "img", "hr", "meta", "input", "link"}

    def __init__(self):
        super().__init__()
        self.counts: dict[str, int] = {}
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


@pytest.fixture(scope="module")
def deep_capture():
    model = DeepMLP(40, 32, nnx.Rngs(0))
    with capture(model, methods=True) as cap:
        model(jax.random.normal(jax.random.key(0), (8, 16, 32)))
    return cap


def test_a_deep_model_s_saved_table_takes_at_most_1_kib_per_row(deep_capture):
    records = deep_capture.records
    assert len(records) >= 200
    page = deep_capture.show()._repr_mimebundle_()[0]["text/html"]
    per_row = len(page.encode()) / len(records)
    print(f"{len(records)} rows, {per_row:.0f} bytes per row")
    assert per_row <= 1024


def test_the_saved_table_is_well_formed_script_free_and_names_every_site(deep_capture):
    records = deep_capture.records
    page = deep_capture.show()._repr_mimebundle_()[0]["text/html"]
    tags = Tags()
    tags.feed(page)
    tags.close()
    assert tags.open == []
    assert "script" not in tags.counts and "<script" not in page.lower()
    assert tags.counts["tr"] == len(records) + 1  # the header and one row per record
    assert tags.counts["path"] == tags.counts["svg"] == len(records)  # one path per sparkline
    assert tags.counts["style"] == 1 and ' style="' not in page
    for record in records:
        assert f"<td>{html.escape(site_label(record.path, record.name))}</td>" in page
    assert "<td>layers.3 (output)</td><td>(8,16,32)</td><td>float32</td>" in page


def test_sparkline_heights_and_path_follow_the_histogram():
    heights = bar_heights(np.array([[0, 2, 2, 200], [0, 0, 0, 200]]), height=16)  # stacked rows pool
    assert heights == [0, 1, 1, 16]
    assert sparkline_path(heights, height=16) == "M0 16h1V15h2V0h1V16z"
    assert sparkline_path([0, 0], height=16) == "M0 16h2V16z"


def test_nonfinite_counts_are_bold_and_only_mixed_types_get_a_type_column():
    class Perturbed(nnx.Module):
        def __call__(self, x):
            h = self.perturb("h", x)
            self.sow(nnx.Intermediate, "log", jax.numpy.log(h))
            return h

    model = Perturbed()
    x = jax.numpy.array([[-1.0, 1.0, 2.0]])
    with capture(model) as cap:
        model(x)
    page = cap.show()._repr_mimebundle_()[0]["text/html"]
    assert "<th>type</th>" not in page and "<b>1/0</b>" in page
    with capture(model, nnx.Intermediate, nnx.Perturbation) as both:
        model(x)
    page = both.show()._repr_mimebundle_()[0]["text/html"]
    assert "<th>type</th>" in page and "<td>activation</td>" in page
    # Outputs share a page: both tables carry the same styles, which cannot restyle the other.
    first, second = cap.show()._repr_mimebundle_()[0]["text/html"], page
    assert first.split("</style>")[0] == second.split("</style>")[0]
    assert '<table class="jcnb-static">' in first and '<table class="jcnb-static jcnb-typed">' in second


def test_a_masked_row_of_the_saved_table_leaves_the_fill_out_and_says_so():
    class Logits(nnx.Module):
        def __call__(self, scores):
            causal = jax.numpy.tril(jax.numpy.ones(scores.shape[-2:], bool))
            self.sow(nnx.Intermediate, "logits", jax.numpy.where(causal, scores, -1e9))
            self.sow(nnx.Intermediate, "relu", nnx.relu(scores))
            return scores

    scores = jax.random.normal(jax.random.key(0), (2, 4, 16, 16))
    model = Logits()
    with capture(model) as cap:
        model(scores)
    view = cap.show()
    page = view._repr_mimebundle_()[0]["text/html"]
    tags = Tags()
    tags.feed(page)
    tags.close()
    assert tags.open == []
    head = "<th>zeros%</th><th>nan/inf</th><th>fill excluded</th><th>histogram</th>"
    assert head in page
    logits_row, relu_row = page.split("<tbody>")[1].split("</tr>")[:2]
    kept = np.asarray(scores)[np.broadcast_to(np.tril(np.ones((16, 16), bool)), scores.shape)]
    cells = [f"{kept.mean():.4g}", f"{kept.std():.4g}", f"{kept.min():.4g}", f"{kept.max():.4g}", "0.0", "-"]
    masked = 2 * 4 * 120
    assert "".join(f"<td>{c}</td>" for c in cells) + f"<td>-1.000e+09 × {masked:,}</td>" in logits_row
    rest_hist = np.frombuffer(view._fill_hists, np.int32)
    assert f'<path d="{sparkline_path(bar_heights(rest_hist))}"/>' in logits_row
    assert "<td>-</td><td></td><td><svg" in relu_row  # no fill: an empty cell
    # A table without fills has no such column.
    assert "fill excluded" not in capture_relu_only_page()


def capture_relu_only_page():
    model = nnx.Module()
    with capture(model) as cap:
        model.sow(nnx.Intermediate, "relu", nnx.relu(jax.random.normal(jax.random.key(0), (8, 8))))
    return cap.show()._repr_mimebundle_()[0]["text/html"]
