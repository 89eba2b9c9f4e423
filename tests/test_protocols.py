"""The recorder contract the backends rely on (jaxcapture_nb.core.protocols)."""

import jax.numpy as jnp
import pytest
from flax import nnx

from jaxcapture_nb.capturing.recorder import Recorder
from jaxcapture_nb.core.protocols import Delivery, Item, PackedRow, SiteRecorder
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.stats.summarize import packed_summary


def _recorders():
    return [
        *(Recorder(keep=keep, bins=8) for keep in ("all", "last", "summary")),
        Stream(bins=8, include=None, every=2, keep_steps=10, grads=False),
    ]


@pytest.mark.parametrize("recorder", _recorders(), ids=["all", "last", "summary", "stream"])
def test_both_recorders_take_the_one_event_the_protocol_names(recorder):
    assert isinstance(recorder, SiteRecorder)
    x = jnp.arange(4.0)
    drained = []
    recorder.add_drain(drained.append)
    recorder.drain(final=True)
    assert drained == [True]
    row = PackedRow(packed_summary(x, 8), (4,), x.dtype)
    step = recorder.clock.call()
    recorder.deliver(Delivery(step, (Item(("m",), nnx.Intermediate, "h", 0, 0, x),)))
    recorder.deliver(Delivery(step, (Item(("m",), nnx.Intermediate, "h", 1, 1, row),)))
    assert recorder.records_step(0)


def test_capabilities_follow_the_keep_policy():
    capabilities = [(r.summarizes_in_trace, r.holds_values, r.keeps_every_value) for r in _recorders()]
    assert capabilities == [
        (False, True, True),
        (False, True, False),
        (True, True, False),
        (True, False, True),
    ]


def test_every_is_decided_by_records_step_for_host_and_traced_steps():
    stream = Stream(bins=8, include=None, every=3, keep_steps=10, grads=False)
    assert [s for s in range(7) if stream.records_step(s)] == [0, 3, 6]
    assert bool(stream.records_step(jnp.int32(3)))
    assert Recorder().records_step(5)


def test_a_step_that_is_not_recorded_is_counted_and_a_repeated_delivery_dropped():
    stream = Stream(bins=8, include=None, every=2, keep_steps=10, grads=False)
    x = jnp.arange(4.0)
    row = PackedRow(packed_summary(x, 8), (4,), x.dtype)
    for step in range(4):
        items = tuple(Item((), nnx.Intermediate, "r", index, index, row) for index in range(2))
        stream.deliver(Delivery(step, items, repeatable=True))
    # A second delivery of a step already recorded (a recomputed forward pass calling back) is dropped.
    stream.deliver(Delivery(2, (Item((), nnx.Intermediate, "r", 0, 0, row),), repeatable=True))
    stream.settle()
    assert stream.steps_seen == 4
    assert {s.label: s.steps[: s.size].tolist() for s in stream.series.values()} == {
        "r": [0, 2],
        "r[1]": [0, 2],
    }
