"""The recorder contract the backends rely on (jaxcapture_nb._protocols)."""

import jax.numpy as jnp
import pytest
from flax import nnx

from jaxcapture_nb._protocols import SiteRecorder
from jaxcapture_nb._recorder import Recorder
from jaxcapture_nb._stream import Stream
from jaxcapture_nb._summary import packed_summary


def _recorders():
    return [
        *(Recorder(keep=keep, bins=8) for keep in ("all", "last", "summary")),
        Stream(bins=8, include=None, every=2, keep_steps=10, grads=False),
    ]


@pytest.mark.parametrize("recorder", _recorders(), ids=["all", "last", "summary", "stream"])
def test_both_recorders_take_every_call_the_protocol_names(recorder):
    assert isinstance(recorder, SiteRecorder)
    x = jnp.arange(4.0)
    recorder.add_drain(lambda: None)
    recorder.drain()
    recorder.expect(("m",), nnx.Intermediate, "h", 1)
    recorder.add(("m",), nnx.Intermediate, "h", x, step=0, index=0, skipped=0)
    recorder.add_row(("m",), nnx.Intermediate, "h", packed_summary(x, 8), ((4,), x.dtype), 0, step=0, index=1)
    recorder.call_returned()
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


def test_a_row_of_a_step_that_is_not_recorded_is_counted_and_dropped():
    stream = Stream(bins=8, include=None, every=2, keep_steps=10, grads=False)
    x = jnp.arange(4.0)
    for step in range(4):
        for index in range(2):
            stream.add_row(
                (), nnx.Intermediate, "r", packed_summary(x, 8), ((4,), x.dtype), 0, step=step, index=index
            )
    # A second row of a step already recorded (a recomputed forward pass) is dropped.
    stream.add_row((), nnx.Intermediate, "r", packed_summary(x, 8), ((4,), x.dtype), 0, step=2, index=0)
    stream.settle()
    assert {s.label: (s.calls, s.steps[: s.size].tolist()) for s in stream.series.values()} == {
        "r": (4, [0, 2]),
        "r[1]": (4, [0, 2]),
    }
