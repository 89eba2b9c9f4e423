"""capture() on real NNX and Linen models."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from model_checks import has_captures
from models import Block, ConvNet

from jaxcapture_nb import Capture, JaxCaptureWarning, capture
from jaxcapture_nb.stats.step_table import TableSlot


def test_eager_calls_record_every_sow_in_execution_order(convnet, images):
    with capture(convnet) as cap:
        convnet(images)
        convnet(images)
    sites = [(r.site, r.call_index) for r in cap.records]
    assert sites == [("features", 0), ("logits", 0), ("features", 1), ("logits", 1)]
    features = cap.records[0]
    assert features.shape == (2, 8, 8, 4) and features.dtype == "float32"
    assert features.var_type is nnx.Intermediate
    assert isinstance(features.value, jax.Array)
    assert int(features.summary.count) == 2 * 8 * 8 * 4
    assert not has_captures(convnet)


def test_a_capture_lists_its_sites_like_a_dict_and_says_how_it_is_read(convnet, images):
    with capture(convnet) as cap:
        convnet(images)
        convnet(images)
    assert list(cap) == ["features", "logits"]
    assert "logits" in cap and "nothing" not in cap
    assert {site: cap[site].shape for site in cap} == {"features": (2, 8, 8, 4), "logits": (2, 10)}
    with pytest.raises(
        TypeError, match="read by a site's name .* not by int; list\\(capture\\) gives the names"
    ):
        cap[0]


def test_output_is_unchanged_by_capture(convnet, images):
    convnet.eval()
    with capture(convnet):
        expected = convnet(images)
    with capture(convnet, methods=True):
        got = convnet(images)
    np.testing.assert_array_equal(got, expected)


def count_traces(fn):
    calls = []

    def counted(*args):
        calls.append(1)
        return fn(*args)

    return counted, calls


@pytest.mark.parametrize("keep", ["last", "summary"])
def test_jitted_step_in_a_loop_traces_once(convnet, images, keep):
    convnet.eval()  # deterministic, to compare with an eager reference
    body, traces = count_traces(lambda model, x: model(x).sum())
    step = nnx.jit(body)
    with capture(convnet, keep=keep) as cap:
        for i in range(20):
            step(convnet, images * i)
    assert len(traces) == 1
    assert [r.site for r in cap.records] == ["features", "logits"]
    # The one record per site says which value it kept: the 20th, call 19.
    assert [r.call_index for r in cap.records] == [19, 19]
    assert [line.split()[2] for line in cap.table().splitlines()] == ["call", "19", "19"]
    # The latest step's values: images * 19.
    with capture(convnet) as reference:
        convnet(images * 19)
    for got, want in zip(cap.records, reference.records, strict=True):
        np.testing.assert_allclose(float(got.summary.mean), float(want.summary.mean), rtol=1e-5)
    if keep == "summary":
        assert all(r.value is None for r in cap.records)
    else:
        np.testing.assert_allclose(cap.records[1].value, reference.records[1].value, rtol=1e-5)


def test_keep_summary_computes_summaries_inside_the_jitted_step(convnet, images):
    step = nnx.jit(lambda model, x: model(x).sum())
    with capture(convnet, keep="summary") as cap:
        step(convnet, images)
        held = [value for _, value in cap._recorder._pending.values()]
    # What the capture holds is the summary (six statistics, five counts and
    # the 64 histogram bins in one packed row per site), not the tensor.
    assert held and all(isinstance(slot, TableSlot) and slot.packed.shape[-1] == 6 + 5 + 64 for slot in held)


def test_memory_stays_flat_over_many_steps(convnet, images):
    step = nnx.jit(lambda model, x: model(x).sum())
    with capture(convnet, keep="summary") as cap:
        for _ in range(200):
            step(convnet, images)
        assert len(cap.records) == 2
        live = len(jax.live_arrays())
        for _ in range(200):
            step(convnet, images)
        assert len(cap.records) == 2
        assert len(jax.live_arrays()) <= live + 2


def test_keep_all_in_a_jitted_loop_records_every_call_from_one_trace(convnet, images):
    body, traces = count_traces(lambda model, x: model(x).sum())
    step = nnx.jit(body)
    with capture(convnet) as cap:
        for i in range(3):
            step(convnet, images * i)
    assert len(traces) == 1
    assert [(r.site, r.call_index) for r in cap.records] == [
        ("features", 0),
        ("logits", 0),
        ("features", 1),
        ("logits", 1),
        ("features", 2),
        ("logits", 2),
    ]
    # Call 0 sees images * 0: a constant batch, which train-mode BatchNorm maps to 0.
    assert float(cap.records[0].summary.max) == 0.0
    assert float(cap.records[4].summary.std) > 0


def test_eager_and_jitted_calls_interleave_in_order(convnet, images):
    convnet.eval()
    step = nnx.jit(lambda model, x: model(x).sum())
    with capture(convnet, include="logits") as cap:
        step(convnet, images)
        convnet(images * 2)
    means = [float(r.summary.mean) for r in cap.records]
    with capture(convnet, include="logits") as ref:
        convnet(images)
        convnet(images * 2)
    np.testing.assert_allclose(means, [float(r.summary.mean) for r in ref.records], rtol=1e-5)


def test_scan_stacked_layers_give_one_record_with_the_stacked_axis_first(stack):
    x = jnp.ones((5, 6))
    for run in (stack, nnx.jit(lambda m, x: m(x))):
        args = (x,) if run is stack else (stack, x)
        with capture(stack) as cap:
            run(*args)
        (record,) = cap.records
        assert record.path == ("blocks",) and record.name == "act"
        assert record.shape == (3, 5, 6)


def test_scan_stacked_layers_under_keep_summary_are_summarized_per_layer(stack):
    with capture(stack, keep="summary") as cap:
        stack(jnp.ones((5, 6)))
    (record,) = cap.records
    assert record.shape == (3, 5, 6)
    assert record.summary.stacked_shape == (3,)
    assert np.asarray(record.summary.count).tolist() == [30, 30, 30]


def test_vmap_stacked_ensemble_gives_one_record_with_the_stacked_axis_first():
    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return Block(3, rngs)

    ensemble = make(nnx.Rngs(0))
    forward = nnx.vmap(lambda member, x: member(x), in_axes=(0, None))
    with capture(ensemble) as cap:
        forward(ensemble, jnp.ones((2, 3)))
    (record,) = cap.records
    assert record.site == "act" and record.shape == (4, 2, 3)


def test_methods_records_every_submodule_call_and_restores_classes(convnet, images):
    originals = {cls: dict(vars(cls)) for cls in (ConvNet, nnx.Conv, nnx.BatchNorm, nnx.Linear, nnx.Dropout)}
    with capture(convnet, methods=True) as cap:
        convnet(images)
    sites = [r.site for r in cap.records]
    assert sites == [
        "conv.__call__",
        "bn.__call__",
        "features",
        "dropout.__call__",
        "head.__call__",
        "logits",
        "__call__",
    ]
    for cls, before in originals.items():
        assert dict(vars(cls)) == before, cls


def test_methods_leaves_other_instances_of_the_same_class_alone(convnet, images):
    target = ConvNet(nnx.Rngs(1))  # same classes, not part of the captured model
    with capture(convnet, methods=True) as cap:
        target_out = target(images)
        convnet(images)
    assert target_out.shape == (2, 10)
    assert all(r.site != "features" or r.call_index == 0 for r in cap.records)
    assert len(cap.records) == 7
    assert not has_captures(target)


def test_flax_capture_raises_on_other_instances_of_the_same_class(convnet, images):
    # Why methods=True cannot simply call nnx.capture(method_outputs=...):
    # Flax patches the classes, so a second instance raises inside the block.
    target = ConvNet(nnx.Rngs(1))

    def forward(model, x):
        target(x)
        return model(x)

    with pytest.raises(ValueError, match="Variable"):
        nnx.capture(forward, nnx.Intermediate, method_outputs=nnx.Intermediate)(convnet, images)


def test_include_regex_and_callable(convnet, images):
    with capture(convnet, methods=True, include=r"^head\.") as cap:
        convnet(images)
    assert [r.site for r in cap.records] == ["head.__call__"]
    with capture(convnet, include=lambda site: site.endswith("features")) as cap:
        convnet(images)
    assert [r.site for r in cap.records] == ["features"]


def test_an_include_that_matches_nothing_names_the_sites_that_were_sowed(convnet, images):
    with capture(convnet, include="nomatch") as cap:
        convnet(images)
    assert cap.records == []
    assert (
        cap.table().splitlines()[1] == "(no site matched include='nomatch'; 2 sites sowed: features, logits)"
    )
    assert repr(cap.show()) == cap.table()
    # Sites are named in the order they were first sowed, the first few of them.
    with capture(convnet, methods=True, include=re.compile("nomatch")) as cap:
        nnx.jit(lambda model, x: model(x))(convnet, images)
    assert cap.table().splitlines()[1] == (
        "(no site matched include='nomatch'; 7 sites sowed: "
        "conv.__call__, bn.__call__, features, dropout.__call__, head.__call__ and 2 more)"
    )


def test_a_model_that_sows_nothing_suggests_methods(images):
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    with capture(model) as cap:
        model(jnp.ones((2, 3)))
    note = "(nothing was sowed; with methods=True, capture() also records every submodule's method outputs)"
    assert cap.table().splitlines()[1:] == [note]
    assert repr(cap.show()) == cap.table()
    with capture(model, methods=True) as cap:
        pass  # methods=True, and no call
    assert cap.table().splitlines()[1:] == ["(nothing was sowed)"]


@pytest.mark.parametrize("keep", ["last", "summary"])
def test_one_record_per_site_keeps_the_number_of_the_call_it_came_from(convnet, images, keep):
    step = nnx.jit(lambda model, x: model(x).sum())
    with capture(convnet, keep=keep) as cap:
        for _ in range(3):
            step(convnet, images)
        # A drain in the middle of the loop (reading the records) does not restart the count.
        assert [(r.site, r.call_index) for r in cap.records] == [("features", 2), ("logits", 2)]
        convnet(images)  # eager calls count too
        for _ in range(2):
            step(convnet, images)
    assert [(r.site, r.call_index) for r in cap.records] == [("features", 5), ("logits", 5)]


def test_linen_keeps_the_number_of_the_call_the_summary_came_from(linen_net):
    module, variables = linen_net
    apply = jax.jit(lambda variables, x: module.apply(variables, x))  # traced inside the block
    with capture(module, keep="summary") as cap:
        for _ in range(4):
            apply(variables, jnp.ones((3, 4)))
    assert [(r.site, r.call_index, r.value) for r in cap.records] == [("hidden", 3, None)]


class Boom(Exception):
    pass


@pytest.mark.parametrize("error", [Boom("inside"), KeyboardInterrupt()])
def test_a_failing_block_leaves_the_model_clean_and_keeps_what_was_captured(convnet, images, error):
    classes_before = dict(vars(nnx.Linear))
    cap = capture(convnet, methods=True)
    with pytest.raises(type(error)) as raised:
        with cap:
            convnet(images)
            raise error
    assert raised.value is error
    assert not has_captures(convnet)
    assert dict(vars(nnx.Linear)) == classes_before
    assert [r.site for r in cap.records][-2:] == ["logits", "__call__"]
    assert cap.records[0].summary is not None


def test_a_failure_inside_a_jitted_step_keeps_earlier_steps(convnet, images):
    def body(model, x, fail):
        out = model(x).sum()
        if fail:
            raise Boom("trace failed")
        return out

    step = nnx.jit(body, static_argnums=2)
    cap = capture(convnet, keep="last")
    with pytest.raises(Boom), cap:
        step(convnet, images, False)
        step(convnet, images, True)
    assert [r.site for r in cap.records] == ["features", "logits"]
    assert not has_captures(convnet)
    # The model works as before, with and without a new capture.
    assert step(convnet, images, False).shape == ()
    # That plain call sowed outside a capture, which the next capture points out.
    with pytest.warns(JaxCaptureWarning, match="outside a capture"), capture(convnet) as again:
        step(convnet, images, False)
    assert len(again.records) == 2


def test_flax_capture_leaves_captures_behind_and_ours_reports_it(convnet, images):
    def failing(model, x):
        model(x)
        raise Boom()

    with pytest.raises(Boom):
        nnx.capture(failing, nnx.Intermediate)(convnet, images)
    if not has_captures(convnet):
        pytest.skip("this Flax release cleans up after a failing nnx.capture")
    # Upstream leaves __captures__ behind: later sows accumulate silently.
    with pytest.raises(RuntimeError, match="leftover `__captures__`"):
        with capture(convnet):
            pass
    for _, m in nnx.iter_modules(convnet):
        vars(m).pop("__captures__", None)
    with capture(convnet) as cap:
        convnet(images)
    assert len(cap.records) == 2


def test_later_sows_do_not_accumulate_after_a_failed_capture(convnet, images):
    with pytest.raises(Boom), capture(convnet):
        convnet(images)
        raise Boom()
    with capture(convnet) as cap:
        convnet(images)
    assert [(r.site, r.call_index) for r in cap.records] == [("features", 0), ("logits", 0)]


def test_the_same_model_twice_at_once_is_an_error_two_models_are_fine(convnet, images):
    other = ConvNet(nnx.Rngs(2))
    with capture(convnet) as first, capture(other) as second:
        convnet(images)
        other(images)
        with pytest.raises(RuntimeError, match="already being captured"):
            with capture(convnet):
                pass
        with pytest.raises(RuntimeError, match="already being captured"):
            with capture(convnet.head):  # a submodule of a captured model
                pass
        convnet(images)
    assert len(first.records) == 4 and len(second.records) == 2


def test_other_variable_types_and_user_subclasses(images):
    class Attention(nnx.Intermediate):
        pass

    class Model(nnx.Module):
        def __init__(self):
            self.scale = 3.0

        def __call__(self, x):
            x = self.perturb("grad_of_x", x)
            self.sow(Attention, "weights", x * 2)
            self.sow(nnx.Intermediate, "ignored", x)
            return self.scale * x

    model = Model()
    with capture(model, nnx.Perturbation, Attention) as cap:
        y = model(images)
    np.testing.assert_allclose(y, 3 * images)
    by_site = {r.site: r for r in cap.records}
    assert set(by_site) == {"grad_of_x", "weights"}
    assert by_site["grad_of_x"].var_type is nnx.Perturbation
    np.testing.assert_array_equal(by_site["grad_of_x"].value, jnp.zeros_like(images))
    assert by_site["weights"].var_type is Attention


def test_non_array_sows_become_records_without_a_summary_and_pytrees_one_per_leaf():
    class Model(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "number", 3)
            self.sow(nnx.Intermediate, "nothing", None)
            self.sow(nnx.Intermediate, "tree", {"a": x, "b": (x, x)})
            self.sow(nnx.Intermediate, "array", x)
            return x

    with capture(Model()) as cap:
        Model.__call__(cap.model, jnp.ones(3))
    by_site = {r.site: r for r in cap.records}
    assert by_site["number"].value == 3 and by_site["number"].summary is None
    assert by_site["nothing"].value is None and by_site["nothing"].summary is None
    leaves = [site for site in by_site if site.startswith("tree")]
    assert leaves == ["tree['a']", "tree['b'][0]", "tree['b'][1]"]
    assert all(by_site[site].summary is not None for site in leaves)
    assert by_site["array"].summary is not None
    assert "not an array" in cap.table()


def test_state_is_shaped_like_flax_own(convnet, images):
    convnet.eval()
    with capture(convnet) as cap:
        convnet(images)
        convnet(images)
    _, flax_state = nnx.capture(lambda m, x: (m(x), m(x)), nnx.Intermediate)(convnet, images)
    ours = cap.state
    assert isinstance(ours, nnx.State)
    assert jax.tree.structure(ours) == jax.tree.structure(flax_state)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(flax_state), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_first_nonfinite_finds_the_first_site_with_nan_or_inf():
    class Model(nnx.Module):
        def __init__(self, rngs):
            self.a = Block(3, rngs)
            self.b = Block(3, rngs)

        def __call__(self, x):
            h = self.a(x)
            h = jnp.log(h - 1.0)  # NaN for h < 1, -inf at h == 1
            self.sow(nnx.Intermediate, "log", h)
            return self.b(h)

    model = Model(nnx.Rngs(0))
    with capture(model) as cap:
        model(jnp.ones((2, 3)))
    first = cap.first_nonfinite()
    assert first is not None and first.site == "log"
    assert first.nonfinite_count > 0
    with capture(model, include="^a") as clean:
        model(jnp.ones((2, 3)))
    assert clean.first_nonfinite() is None


def test_table_is_deterministic_and_is_the_repr(convnet, images):
    convnet.eval()
    tables = []
    for _ in range(2):
        with capture(convnet) as cap:
            convnet(images)
        tables.append(cap.table())
    assert tables[0] == tables[1] == repr(cap)
    assert not re.search(r"0x[0-9a-f]{6,}", tables[0])
    header, first, second = tables[0].splitlines()
    assert header.split()[:3] == ["path", "name", "call"]
    assert first.split()[:5] == ["(root)", "features", "0", "Intermediate", "(2,8,8,4)"]


def test_decorator_form_captures_each_call_afresh(convnet, images):
    cap = capture(convnet, include="logits")

    @cap
    def predict(x):
        return convnet(x)

    predict(images)
    predict(images)
    assert predict.capture is cap
    assert isinstance(cap, Capture)
    assert [r.call_index for r in cap.records] == [0]
    assert not has_captures(convnet)


def test_sow_outside_a_capture_is_detected_and_named(images):
    model = ConvNet(nnx.Rngs(0))
    model(images)  # plain sow: stores growing tuples on the model
    with pytest.warns(JaxCaptureWarning, match=r"nnx.pop\(model, nnx.Intermediate\)"):
        with capture(model) as cap:
            model(images)
    assert len(cap.records) == 2


def test_bad_arguments_have_clear_errors(convnet):
    with pytest.raises(ValueError, match="keep='often' is not one of"):
        capture(convnet, keep="often")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        capture(convnet, include="(")
    with pytest.raises(TypeError, match="flax.nnx.Module or flax.linen.Module"):
        capture(lambda x: x)
    with pytest.raises(TypeError, match="nnx.Variable types"):
        capture(convnet, "Intermediate")
    with pytest.raises(ValueError, match="bins"):
        capture(convnet, bins=0)


def test_a_new_block_reuses_the_compiled_step_and_each_policy_traces_its_own(convnet, images):
    body, traces = count_traces(lambda model, x: model(x).sum())
    step = nnx.jit(body)
    for _ in range(3):
        with capture(convnet, keep="last"):
            step(convnet, images)
            step(convnet, images)
    assert len(traces) == 1
    with capture(convnet, keep="summary") as cap:
        step(convnet, images)
        held = [value for _, value in cap._recorder._pending.values()]
    assert len(traces) == 2  # keep="summary" stores summaries: its own trace
    assert all(slot.packed.shape[-1] == 6 + 5 + 64 for slot in held)  # a summary, not the tensor
    assert all(r.value is None for r in cap.records)


def test_models_with_lists_of_layers_under_grad():
    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(4, 4, rngs=rngs) for _ in range(3)])

        def __call__(self, x):
            for i, layer in enumerate(self.layers):
                x = nnx.relu(layer(x))
                self.sow(nnx.Intermediate, f"act{i}", x)
            return x.sum()

    model = MLP(nnx.Rngs(0))
    step = nnx.jit(lambda m, x: nnx.grad(lambda m: m(x))(m))
    with capture(model, keep="summary", methods=True) as cap:
        step(model, jnp.ones((2, 4)))
        step(model, jnp.ones((2, 4)))
    sites = [r.site for r in cap.records]
    assert sites[:4] == ["layers.0.__call__", "act0", "layers.1.__call__", "act1"]
    assert not has_captures(model) and "append" not in [s.rsplit(".", 1)[-1] for s in sites]


def test_a_submodule_shared_between_two_places_is_captured_once(images):
    class Twice(nnx.Module):
        def __init__(self, rngs):
            block = Block(4, rngs)
            self.first, self.second = block, block

        def __call__(self, x):
            return self.second(self.first(x))

    model = Twice(nnx.Rngs(0))
    with capture(model) as cap:
        model(jnp.ones((2, 4)))
    assert [(r.site, r.call_index) for r in cap.records] == [("first.act", 0), ("first.act", 1)]
    assert not has_captures(model)


class WideLayer(nnx.Module):
    """Sows a value too large for the step's table of small values."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(64, 2048, rngs=rngs)

    def __call__(self, x):
        h = jnp.tanh(self.linear(x))
        self.sow(nnx.Intermediate, "wide", h)
        return h.sum()


def test_a_capture_hands_a_steps_large_values_to_the_host_up_to_a_budget(monkeypatch):
    from jaxcapture_nb import summarize
    from jaxcapture_nb.backends.nnx import parcel
    from jaxcapture_nb.stats import summarize as summarize_module

    model = WideLayer(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (160, 64))  # 327,680 values
    before = set(summarize_module._row_programs)
    with capture(model, keep="summary") as handed_out:
        nnx.jit(lambda m, x: m(x))(model, x)
    # Summarized on the host, by the program its shape shares with eager values.
    (record,) = handed_out.records
    assert [key[0] for key in set(summarize_module._row_programs) - before] == [(160, 2048)]
    expected = summarize(jnp.tanh(model.linear(x)))
    np.testing.assert_array_equal(record.summary.hist, expected.hist)
    np.testing.assert_allclose(record.summary.stats, expected.stats, rtol=1e-6)
    # Beyond the budget, summarized in the step: the same summary, to float32 rounding.
    monkeypatch.setattr(parcel, "HANDED_OUT_BYTES", 1024)
    with capture(model, keep="summary") as in_step:
        nnx.jit(lambda m, x: m(x))(model, x)
    (inside,) = in_step.records
    np.testing.assert_array_equal(inside.summary.hist, expected.hist)
    np.testing.assert_allclose(inside.summary.stats, expected.stats, rtol=1e-5)
