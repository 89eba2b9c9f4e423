"""Every entry point on models written the way published ones are.

The NNX model (``tests/transformer.py``) is a small Gemma-style decoder:
blocks returning ``(cache, x)``, masked attention logits filled with a
constant near the float32 minimum, ``jax.lax.top_k`` values and int32 indices,
tuple and dict sows, an ``nnx.List`` of blocks or blocks stacked with
``nnx.vmap`` and run by ``nnx.scan`` over ``nnx.remat``, and dropout. Values
are checked leaf by leaf against what Flax itself records for the same model
and input. The Linen model scans an LSTM cell that sows.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from flax.traverse_util import flatten_dict
from transformer import MASK_VALUE, Config, LinenLSTM, Transformer, make_train_step, next_token_loss

from jaxcapture_nb import (
    CaptureView,
    Gradient,
    JaxCaptureWarning,
    capture,
    capture_grads,
    compare_modes,
    watch,
)
from jaxcapture_nb.stats.schema import compare_columns, live_columns
from jaxcapture_nb.views import payload

LAYERS = Config().num_layers
VOCAB = Config().vocab

# What each block sows, named the way a pytree's leaves are: by their place.
BLOCK_SOWS = [
    "attn.logits",
    "mlp.top_experts[0]",
    "mlp.top_experts[1]",
    "mlp.pair[0]",
    "mlp.pair[1]",
    "residual['attn']",
    "residual['mlp']",
]
# The method outputs of each block. The attention and the block return
# (None, x) when not decoding; the None makes no record.
BLOCK_METHODS = [
    "attention_norm.__call__",
    "attn.query.__call__",
    "attn.key_value.__call__",
    "attn.out.__call__",
    "attn.__call__[1]",
    "dropout.__call__",
    "mlp_norm.__call__",
    "mlp.router.__call__",
    "mlp.dropout.__call__",
    "mlp.__call__",
    "__call__[1]",
]
TOP_SOWS = ["next_token_logits", "next_token_ids"]
TOP_METHODS = ["embed.__call__", "final_norm.__call__", "embed.attend", "__call__[0]"]

SHAPES = {
    "attn.logits": (2, 4, 8, 8),
    "mlp.top_experts[0]": (2, 8, 2),
    "mlp.top_experts[1]": (2, 8, 2),
    "mlp.pair[0]": (2, 8, 4, 32),
    "residual['attn']": (2, 8, 16),
    "attn.__call__[1]": (2, 8, 16),
    "__call__[1]": (2, 8, 16),
}

LIST_PREFIXES = [f"blocks.{i}." for i in range(LAYERS)]


def sow_sites(prefixes: list[str] = LIST_PREFIXES) -> set[str]:
    return {f"{p}{s}" for p in prefixes for s in BLOCK_SOWS} | set(TOP_SOWS)


def method_sites(prefixes: list[str] = LIST_PREFIXES) -> set[str]:
    return {f"{p}{s}" for p in prefixes for s in BLOCK_METHODS} | set(TOP_METHODS)


def expected_sites(methods: bool, prefixes: list[str] = LIST_PREFIXES) -> set[str]:
    return sow_sites(prefixes) | (method_sites(prefixes) if methods else set())


def make_model(**kwargs) -> Transformer:
    """The same weights and RNG state on every call."""
    switches = {k: kwargs.pop(k) for k in ("sow_intermediates", "perturb_activations") if k in kwargs}
    return Transformer(Config(**switches), rngs=nnx.Rngs(0), **kwargs)


def leaves_by_place(name: str, value):
    """``(name + place, leaf)`` for every leaf, the naming capture() follows; None leaves vanish."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(value)
    return [(name + jax.tree_util.keystr(path), leaf) for path, leaf in leaves]


def flax_records(model: nnx.Module, *args) -> dict[tuple[str, int], jax.Array]:
    """What ``nnx.capture`` records for one eager call, as ``{(site, call_index): leaf}``.

    Runs on a clone, so the model's RNG counters are as they were for the next run.
    """
    _, state = nnx.capture(nnx.clone(model), nnx.Intermediate, method_outputs=nnx.Intermediate)(*args)
    out = {}
    for path, variable in nnx.to_flat_state(state):
        *module_path, name = path
        for call_index, value in enumerate(variable.get_value()):
            for leaf_name, leaf in leaves_by_place(name, value):
                out[(".".join(str(p) for p in (*module_path, leaf_name)), call_index)] = leaf
    return out


def only_sows(records: dict, prefixes: list[str] = LIST_PREFIXES) -> dict[tuple[str, int], jax.Array]:
    sites = sow_sites(prefixes)
    return {key: value for key, value in records.items() if key[0] in sites}


def ours(cap) -> dict[tuple[str, int], jax.Array]:
    return {(r.site, r.call_index): r.value for r in cap.records}


def assert_values_equal(got, want, key) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(key))


def assert_same_records(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert_values_equal(got[key], value, key)


def assert_finite_summary(record) -> None:
    """Finite mean and std and no NaN or Inf, whatever the magnitudes."""
    s = record.summary
    assert s is not None and s.reason is None, record.site
    assert np.isfinite(np.asarray(s.mean)).all(), (record.site, s.mean)
    assert np.isfinite(np.asarray(s.std)).all(), (record.site, s.std)
    assert record.nonfinite_count == 0, record.site


def mean64(x) -> float:
    return float(np.mean(np.asarray(x, np.float64)))


def forward(model, tokens):
    return model(tokens)


# One jitted forward for every test, so that tests with the same model
# structure and keep policy reuse its traces.
jit_forward = nnx.jit(forward)


@pytest.fixture(scope="module")
def tokens():
    return jax.random.randint(jax.random.key(1), (2, 8), 0, VOCAB)


@pytest.fixture(scope="module")
def reference(tokens):
    """Flax's records of one call of the nnx.List model (every sow and method output)."""
    return flax_records(make_model(), tokens)


@pytest.fixture(scope="module")
def eval_reference(tokens):
    """Flax's records of one call of the nnx.List model in evaluation mode (no dropout)."""
    model = make_model()
    model.eval()
    return flax_records(model, tokens)


@pytest.fixture(scope="module")
def scan_reference(tokens):
    """Flax's records of one call of the scan-stacked, rematerialized model."""
    return flax_records(make_model(scan_layers=True, remat=True), tokens)


# -- the site names, pinned ----------------------------------------------------------

# Every site name a capture of one call records, sorted, written out rather than built
# from the lists above: the same tests pass on every supported Flax release (nnx.capture
# skips nnx.List nodes from Flax 0.12.9 on), so the releases name the sites alike.
LIST_SITES = [
    "blocks.0.attn.logits",
    "blocks.0.mlp.pair[0]",
    "blocks.0.mlp.pair[1]",
    "blocks.0.mlp.top_experts[0]",
    "blocks.0.mlp.top_experts[1]",
    "blocks.0.residual['attn']",
    "blocks.0.residual['mlp']",
    "blocks.1.attn.logits",
    "blocks.1.mlp.pair[0]",
    "blocks.1.mlp.pair[1]",
    "blocks.1.mlp.top_experts[0]",
    "blocks.1.mlp.top_experts[1]",
    "blocks.1.residual['attn']",
    "blocks.1.residual['mlp']",
    "next_token_ids",
    "next_token_logits",
]

LIST_SITES_WITH_METHODS = [
    "__call__[0]",
    "blocks.0.__call__[1]",
    "blocks.0.attention_norm.__call__",
    "blocks.0.attn.__call__[1]",
    "blocks.0.attn.key_value.__call__",
    "blocks.0.attn.logits",
    "blocks.0.attn.out.__call__",
    "blocks.0.attn.query.__call__",
    "blocks.0.dropout.__call__",
    "blocks.0.mlp.__call__",
    "blocks.0.mlp.dropout.__call__",
    "blocks.0.mlp.pair[0]",
    "blocks.0.mlp.pair[1]",
    "blocks.0.mlp.router.__call__",
    "blocks.0.mlp.top_experts[0]",
    "blocks.0.mlp.top_experts[1]",
    "blocks.0.mlp_norm.__call__",
    "blocks.0.residual['attn']",
    "blocks.0.residual['mlp']",
    "blocks.1.__call__[1]",
    "blocks.1.attention_norm.__call__",
    "blocks.1.attn.__call__[1]",
    "blocks.1.attn.key_value.__call__",
    "blocks.1.attn.logits",
    "blocks.1.attn.out.__call__",
    "blocks.1.attn.query.__call__",
    "blocks.1.dropout.__call__",
    "blocks.1.mlp.__call__",
    "blocks.1.mlp.dropout.__call__",
    "blocks.1.mlp.pair[0]",
    "blocks.1.mlp.pair[1]",
    "blocks.1.mlp.router.__call__",
    "blocks.1.mlp.top_experts[0]",
    "blocks.1.mlp.top_experts[1]",
    "blocks.1.mlp_norm.__call__",
    "blocks.1.residual['attn']",
    "blocks.1.residual['mlp']",
    "embed.__call__",
    "embed.attend",
    "final_norm.__call__",
    "next_token_ids",
    "next_token_logits",
]

SCAN_SITES = [
    "blocks.attn.logits",
    "blocks.mlp.pair[0]",
    "blocks.mlp.pair[1]",
    "blocks.mlp.top_experts[0]",
    "blocks.mlp.top_experts[1]",
    "blocks.residual['attn']",
    "blocks.residual['mlp']",
    "next_token_ids",
    "next_token_logits",
]

SCAN_SITES_WITH_METHODS = [
    "__call__[0]",
    "blocks.__call__[1]",
    "blocks.attention_norm.__call__",
    "blocks.attn.__call__[1]",
    "blocks.attn.key_value.__call__",
    "blocks.attn.logits",
    "blocks.attn.out.__call__",
    "blocks.attn.query.__call__",
    "blocks.dropout.__call__",
    "blocks.mlp.__call__",
    "blocks.mlp.dropout.__call__",
    "blocks.mlp.pair[0]",
    "blocks.mlp.pair[1]",
    "blocks.mlp.router.__call__",
    "blocks.mlp.top_experts[0]",
    "blocks.mlp.top_experts[1]",
    "blocks.mlp_norm.__call__",
    "blocks.residual['attn']",
    "blocks.residual['mlp']",
    "embed.__call__",
    "embed.attend",
    "final_norm.__call__",
    "next_token_ids",
    "next_token_logits",
]


@pytest.mark.parametrize(
    ("scan_layers", "methods", "sites"),
    [
        (False, False, LIST_SITES),
        (False, True, LIST_SITES_WITH_METHODS),
        (True, False, SCAN_SITES),
        (True, True, SCAN_SITES_WITH_METHODS),
    ],
    ids=["list-sows", "list-methods", "scan-sows", "scan-methods"],
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_capture_records_exactly_these_site_names(tokens, scan_layers, methods, sites, jit):
    model = make_model(scan_layers=scan_layers)
    with capture(model, methods=methods) as cap:
        (jit_forward if jit else forward)(model, tokens)
    assert sorted({r.site for r in cap.records}) == sites


def test_flax_own_capture_records_the_same_site_names(reference, scan_reference):
    assert sorted({site for site, _ in reference}) == LIST_SITES_WITH_METHODS
    assert sorted({site for site, _ in scan_reference}) == SCAN_SITES_WITH_METHODS


# -- capture() on the nnx.List model ------------------------------------------------


@pytest.mark.parametrize("methods", [False, True], ids=["sows", "methods"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_keep_all_records_every_leaf_with_flax_own_values(tokens, reference, methods, jit):
    model = make_model()
    with capture(model, methods=methods) as cap:
        (jit_forward if jit else forward)(model, tokens)
    got = ours(cap)
    assert {site for site, _ in got} == expected_sites(methods)
    assert_same_records(got, reference if methods else only_sows(reference))
    by_site = {r.site: r for r in cap.records}
    for prefix in LIST_PREFIXES:
        for suffix, shape in SHAPES.items():
            if methods or suffix in BLOCK_SOWS:
                assert by_site[prefix + suffix].shape == shape, suffix
        # The None cache of a call without decoding makes no record.
        assert f"{prefix}attn.__call__[0]" not in by_site
        assert by_site[f"{prefix}mlp.top_experts[1]"].dtype == "int32"
        logits = by_site[f"{prefix}attn.logits"]
        assert_finite_summary(logits)
        assert float(logits.summary.min) == pytest.approx(MASK_VALUE)
        assert float(logits.summary.mean) == pytest.approx(mean64(logits.value), rel=1e-4)
    assert by_site["next_token_ids"].dtype == "int32" and by_site["next_token_ids"].shape == (2, 4)
    if methods:
        # Each block runs its dropout twice: two calls of one site.
        assert {c for s, c in got if s == "blocks.0.dropout.__call__"} == {0, 1}


@pytest.mark.parametrize("keep", ["last", "summary"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_keep_last_and_summary_hold_the_latest_leaf_of_each_site(tokens, reference, keep, jit):
    latest = {}
    for (site, _), value in sorted(reference.items(), key=lambda item: item[0]):
        latest[site] = value  # sorted by call within a site: the last call wins
    model = make_model()
    with capture(model, methods=True, keep=keep) as cap:
        (jit_forward if jit else forward)(model, tokens)
    by_site = {r.site: r for r in cap.records}
    assert len(by_site) == len(cap.records)  # one record per site
    assert set(by_site) == expected_sites(methods=True) == set(latest)
    for site, want in latest.items():
        record = by_site[site]
        assert record.shape == want.shape and record.dtype == str(want.dtype), site
        assert_finite_summary(record)
        assert float(record.summary.mean) == pytest.approx(mean64(want), rel=1e-4, abs=1e-5), site
        if keep == "summary":
            assert record.value is None
        else:
            assert_values_equal(record.value, want, site)


def test_jitted_records_keep_the_eager_execution_order(tokens):
    model = make_model()
    with capture(model, methods=True) as eager:
        forward(model, tokens)
    with capture(model, methods=True) as jitted:
        jit_forward(model, tokens)
    order = [(r.site, r.call_index) for r in eager.records]
    assert [(r.site, r.call_index) for r in jitted.records] == order


def test_one_jitted_call_under_keep_all_does_not_warn_of_re_tracing(tokens):
    # A module called twice in one step (each block's dropout) sows one site
    # twice in one trace: that is not a state growing from call to call.
    model = make_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxCaptureWarning)
        with capture(model, methods=True) as cap:
            jit_forward(model, tokens)
    assert len(cap.records) == len(expected_sites(methods=True)) + LAYERS


@pytest.mark.parametrize("keep", ["last", "summary"])
def test_a_jitted_step_in_a_loop_traces_once(tokens, eval_reference, keep):
    model = make_model()
    model.eval()
    traces = []

    @nnx.jit
    def step(model, tokens):
        traces.append(1)
        return jnp.sum(model(tokens)[0])

    with capture(model, keep=keep) as cap:
        for i in range(4):
            step(model, (tokens + 3 - i) % VOCAB)
    assert len(traces) == 1
    assert {r.site for r in cap.records} == expected_sites(methods=False)
    # The records are the last step's, whose input is `tokens`.
    theirs = only_sows(eval_reference)
    by_site = {r.site: r for r in cap.records}
    for (site, _), want in theirs.items():
        assert by_site[site].shape == want.shape, site
        assert float(by_site[site].summary.mean) == pytest.approx(mean64(want), rel=1e-4, abs=1e-5), site
    if keep == "last":
        np.testing.assert_array_equal(by_site["next_token_ids"].value, theirs[("next_token_ids", 0)])


def test_decoding_records_each_leaf_of_the_cache(tokens):
    model = make_model()
    cache = model.init_cache(2, 12)
    theirs = flax_records(model, tokens, cache)
    with capture(model, methods=True) as cap:
        nnx.jit(lambda m, t, c: m(t, c))(model, tokens, cache)
    assert_same_records(ours(cap), theirs)
    by_site = {r.site: r for r in cap.records}
    for prefix in LIST_PREFIXES:
        for leaf in ("['k']", "['v']"):
            assert by_site[f"{prefix}attn.__call__[0]{leaf}"].shape == (2, 12, 2, 4)
            assert by_site[f"{prefix}__call__[0]{leaf}"].shape == (2, 12, 2, 4)
        end = by_site[f"{prefix}attn.__call__[0]['end_index']"]
        assert end.shape == () and end.dtype == "int32" and int(end.value) == 8
    # The model returns (logits, [the cache of each block]).
    assert [int(by_site[f"__call__[1][{i}]['end_index']"].value) for i in range(LAYERS)] == [8] * LAYERS
    # Keys past the 8 written ones are masked for every query.
    logits = by_site["blocks.0.attn.logits"]
    assert logits.shape == (2, 4, 8, 12)
    assert np.all(np.asarray(logits.value)[..., 8:] == np.float32(MASK_VALUE))
    assert_finite_summary(logits)


def test_with_sows_switched_off_only_method_outputs_are_recorded(tokens):
    model, baseline = make_model(), make_model(sow_intermediates=False)
    with capture(baseline) as nothing:
        out = baseline(tokens)[0]
    assert nothing.records == []
    with capture(baseline, methods=True) as cap:
        baseline(tokens)
    assert {r.site for r in cap.records} == method_sites()
    with capture(model):
        want = model(tokens)[0]
    np.testing.assert_allclose(out, want, rtol=1e-6)


# -- stacked (nnx.vmap + nnx.scan) and rematerialized blocks -------------------------


@pytest.mark.parametrize(
    ("keep", "jit"), [("all", False), ("summary", True)], ids=["eager-all", "jit-summary"]
)
def test_scan_stacked_blocks_keep_their_layer_axis(tokens, scan_reference, keep, jit):
    model = make_model(scan_layers=True, remat=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", JaxCaptureWarning)
        with capture(model, methods=True, keep=keep) as cap:
            (jit_forward if jit else forward)(model, tokens)
    by_site = {r.site: r for r in cap.records}
    assert set(by_site) == expected_sites(methods=True, prefixes=["blocks."])
    for suffix, shape in SHAPES.items():
        assert by_site[f"blocks.{suffix}"].shape == (LAYERS, *shape), suffix
    assert by_site["blocks.mlp.top_experts[1]"].dtype == "int32"
    logits = by_site["blocks.attn.logits"]
    assert_finite_summary(logits)
    if keep == "all":
        assert_same_records(ours(cap), scan_reference)
    else:
        # Summaries made inside the scan keep one summary per layer.
        assert logits.summary.stacked_shape == (LAYERS,)
        for (site, call), want in scan_reference.items():
            if site.startswith("blocks.") and call == 0 and site != "blocks.dropout.__call__":
                per_layer = np.asarray(want, np.float64).reshape(LAYERS, -1).mean(1)
                np.testing.assert_allclose(
                    np.asarray(by_site[site].summary.mean), per_layer, rtol=1e-4, atol=1e-5
                )
    # One call, and the scan runs each layer once: nothing grows between calls.
    assert not [str(w.message) for w in caught if issubclass(w.category, JaxCaptureWarning)]


def test_scan_over_remat_blocks_under_grad_records_each_sow_once(tokens, scan_reference):
    model = make_model(scan_layers=True, remat=True)
    grad_step = nnx.jit(nnx.grad(lambda model, tokens: jnp.mean(model(tokens)[0] ** 2)))
    with capture(model) as cap:
        grads = grad_step(model, tokens)
    # The backward pass recomputes the blocks; each sow is recorded once, as
    # the forward pass made it.
    assert_same_records(ours(cap), only_sows(scan_reference, ["blocks."]))
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(grads))


# -- watch(), compare_modes(), capture_grads() ---------------------------------------


def test_watch_streams_every_leaf_of_a_jitted_adam_step(tokens):
    model = make_model(remat=True)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    train_step = make_train_step()
    with watch(model, display=False) as w:
        for step in range(3):
            w.log(step=step, loss=train_step(model, optimizer, tokens))
    series = {s.label: s for s in w.stream.series.values()}
    assert set(series) == expected_sites(methods=False)
    finite = [live_columns().index(c) for c in ("mean", "std", "min", "max")]
    nonfinite = [live_columns().index(c) for c in ("nan", "posinf", "neginf")]
    for label, s in series.items():
        # One value per step: the backward pass's recomputation of a
        # rematerialized block sows nothing more.
        assert s.steps[: s.size].tolist() == [0, 1, 2], label
        assert np.isfinite(s.stats[: s.size, finite]).all(), label
        assert (s.stats[: s.size, nonfinite] == 0).all(), label
    logits = series["blocks.0.attn.logits"]
    assert logits.stats[0, live_columns().index("min")] == pytest.approx(MASK_VALUE)
    assert w.stream.scalars["loss"].size == 3


@pytest.mark.parametrize("scan_layers", [False, True], ids=["list", "scan"])
def test_watch_every_n_gates_the_summaries_inside_remat_and_scan(tokens, scan_layers):
    model = make_model(scan_layers=scan_layers, remat=True)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    traces = []
    train_step = make_train_step(traces)
    with watch(model, every=3, methods=True, display=False) as w:
        for _ in range(7):
            train_step(model, optimizer, tokens)
    assert len(traces) == 1
    once_a_step = [s for s in w.stream.series.values() if s.steps[: s.size].tolist() == [0, 3, 6]]
    assert len(once_a_step) > 2 * LAYERS  # method outputs too
    finite = [live_columns().index(c) for c in ("mean", "std", "min", "max")]
    for s in once_a_step:
        # Sows inside the scanned, rematerialized blocks follow the step's own gate.
        assert s.steps[: s.size].tolist() == [0, 3, 6], s.label
        assert np.isfinite(s.stats[: s.size, finite]).all(), s.label
        assert (s.hists[: s.size].sum(axis=1) > 0).all(), s.label


def test_compare_modes_shifts_each_leaf_and_the_dropout_sites(tokens):
    result = compare_modes(make_model(), tokens)
    shifts = {s.site: s.shift for s in result.sites}
    assert all(np.isfinite(s.shift) for s in result.sites), [
        s.site for s in result.sites if not np.isfinite(s.shift)
    ]
    for site in ("blocks.1.attn.__call__[1]", "blocks.0.__call__[1]", "blocks.1.__call__[1]", "__call__[0]"):
        assert shifts[site] > 0, site
    # Before the first dropout the modes agree exactly.
    assert shifts["blocks.0.attn.__call__[1]"] == 0.0
    assert shifts["blocks.0.attn.logits"] == 0.0
    by_site = {s.site: s for s in result.sites}
    for prefix in LIST_PREFIXES:
        # Dropout runs twice in each block: two sites, named as watch() names them.
        for site in (
            f"{prefix}dropout.__call__",
            f"{prefix}dropout.__call__[1]",
            f"{prefix}mlp.dropout.__call__",
        ):
            assert shifts[site] > 0.05, site
            # It zeroes a quarter of the values in training only.
            zeros = by_site[site].stats[:, compare_columns().index("zero_pct")]
            assert 15 < zeros[0] < 35 and zeros[1] < 1, site
        assert f"{prefix}mlp.top_experts[1]" in shifts


def test_capture_grads_matches_flax_own_perturbation_gradients(tokens):
    model = make_model(perturb_activations=True)
    # Flax's four steps, on clones so that every run draws the same dropout masks.
    _, perturbations = nnx.capture(next_token_loss, nnx.Perturbation)(nnx.clone(model), tokens)

    def loss(model, perturbations, tokens):
        return nnx.capture(next_token_loss, nnx.Intermediate, init=perturbations)(model, tokens)

    grad_step = nnx.jit(nnx.grad(loss, argnums=(0, 1), has_aux=True))
    (_, want), _ = grad_step(nnx.clone(model), perturbations, tokens)
    cap = capture_grads(next_token_loss, model, tokens)
    grads = {r.site: r for r in cap.records if r.var_type is Gradient}
    assert set(grads) == {f"{p}{name}" for p in LIST_PREFIXES for name in ("attn_out", "mlp.hidden")}
    for i, prefix in enumerate(LIST_PREFIXES):
        attn_out, hidden = grads[f"{prefix}attn_out"], grads[f"{prefix}mlp.hidden"]
        assert attn_out.shape == (2, 7, 16) and hidden.shape == (2, 7, 4, 32)
        assert float(np.abs(attn_out.value).max()) > 0
        np.testing.assert_allclose(attn_out.value, want["blocks"][i]["attn_out"][...], rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(
            hidden.value, want["blocks"][i]["mlp"]["hidden"][...], rtol=1e-4, atol=1e-7
        )
    assert {r.site for r in cap.records if r.var_type is nnx.Intermediate} == expected_sites(methods=False)


# -- the magic and the widget ---------------------------------------------------------


def test_the_magic_displays_and_binds_every_leaf_site(ipython, tokens, monkeypatch):
    monkeypatch.setattr("jaxcapture_nb.core.hosts.has_front_end", lambda: True)  # as in a notebook
    model = make_model()
    ipython.user_ns.update(model=model, tokens=tokens)
    shown = []
    ipython.display_pub.publish = lambda data, **kw: shown.append(data)
    try:
        result = ipython.run_cell("%%capture_intermediates model --methods\nlogits, cache = model(tokens)")
    finally:
        del ipython.display_pub.publish
        for name in ("model", "tokens", "logits", "cache"):
            ipython.user_ns.pop(name, None)
    assert result.success
    cap = ipython.user_ns["_capture"]
    assert {r.site for r in cap.records} == expected_sites(methods=True)
    (bundle,) = shown
    assert "application/vnd.jupyter.widget-view+json" in bundle
    text = bundle["text/plain"]
    assert text == cap.table()
    for name in ("__call__[1]", "top_experts[1]", "pair[0]", "residual['attn']", "__call__[0]"):
        assert name in text, name
    assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(model))


def test_the_widget_rows_name_each_leaf_site(tokens):
    model = make_model()
    with capture(model, methods=True) as cap:
        jit_forward(model, tokens)
    view = cap.show()
    assert isinstance(view, CaptureView)
    sites = [".".join(p for p in (row["path"], row["name"]) if p) for row in view._sites]
    assert sites == [r.site for r in cap.records]
    assert set(sites) == expected_sites(methods=True)
    rows = {site: i for i, site in enumerate(sites)}
    assert view._sites[rows["blocks.0.mlp.top_experts[1]"]]["dtype"] == "int32"
    assert view._sites[rows["blocks.0.attn.__call__[1]"]]["name"] == "__call__[1]"
    stats = np.frombuffer(view._stats, np.float64).reshape(len(sites), len(payload.STAT_COLUMNS))
    assert np.isfinite(stats[:, [payload.STAT_COLUMNS.index(c) for c in ("mean", "std", "min", "max")]]).all()
    assert view._first_nonfinite == -1
    # The heatmap of the masked logits (batch 0, head 0) shows the causal
    # mask: a colour range within float32, and masked keys coloured apart
    # from the attended ones.
    view._selected = rows["blocks.0.attn.logits"]
    assert view._heatmap_shape == [8, 8]
    lo, hi = view._heatmap_range
    assert np.isfinite(np.float32([lo, hi])).all(), (lo, hi)
    pixels = np.frombuffer(view._heatmap, np.uint8).reshape(8, 8)
    masked = np.triu(np.ones((8, 8), bool), k=1)
    assert not set(pixels[masked].tolist()) & set(pixels[~masked].tolist())
    html = view._repr_mimebundle_()[0]["text/html"]
    # The saved table names sites as the views do: a call's output reads as an output.
    assert "blocks.0.mlp.top_experts[1]" in html and "blocks.0.attn (output[1])" in html


# -- Linen: nn.scan over an LSTM cell ---------------------------------------------------


@pytest.fixture(scope="module")
def lstm():
    """The Linen model, its input and variables, and Flax's intermediates with and without method outputs."""
    module = LinenLSTM()
    x = jax.random.normal(jax.random.key(2), (2, 5, 3))
    variables = module.init(jax.random.key(0), x)
    references = {}
    for methods in (False, True):
        # capture_intermediates=True adds every submodule's output, as methods=True does.
        _, state = module.apply(variables, x, capture_intermediates=methods, mutable=["intermediates"])
        theirs = references[methods] = {}
        for path, values in flatten_dict(state["intermediates"]).items():
            *module_path, name = path
            for call_index, value in enumerate(values):
                for leaf_name, leaf in leaves_by_place(name, value):
                    theirs[(".".join((*module_path, leaf_name)), call_index)] = leaf
    return module, x, variables, references


@pytest.mark.parametrize(
    ("methods", "jit"), [(False, False), (True, False), (True, True)], ids=["sows", "methods", "jit-methods"]
)
def test_linen_scanned_lstm_records_flax_own_intermediates(lstm, methods, jit):
    module, x, variables, references = lstm
    with capture(module, methods=methods) as cap:
        # Looked up inside the block, where capture() has hooked apply.
        (jax.jit(module.apply) if jit else module.apply)(variables, x)
    assert_same_records(ours(cap), references[methods])
    by_site = {r.site: r for r in cap.records}
    assert by_site["lstm.hidden"].shape == (5, 2, 8)  # one hidden state per step of the scan
    assert {"final_carry[0]", "final_carry[1]", "out"} <= set(by_site)
    if methods:
        assert by_site["lstm.__call__[0][1]"].shape == (5, 2, 8)
