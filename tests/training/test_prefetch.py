"""Batches to the model's device: the transfer plan per device, the prefetch order, staging on the host.

The CUDA path itself (pinned memory, the copy stream) needs a GPU (``tests/test_cuda.py``); here the
decisions are tested directly: :func:`transfer_plan` is a pure function of the device, and the data
loop's one-batch-ahead order is tested with a recording transfer.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.training.data import convert
from ember.training.data.adapter import get_adapter
from ember.training.data.epoch_iterator import EpochIterator
from ember.training.data.prefetch import on_device
from ember.training.distributed import ShardedBatch

torch = pytest.importorskip("torch")  # torch's devices: a core-only install skips the file
transfer = importlib.import_module("ember.backends.torch.transfer")  # imports torch: after the skip


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1", torch.device("cuda", 0)])
def test_cuda_batches_are_pinned_non_blocking_on_a_copy_stream_and_prefetched(device):
    plan = transfer.transfer_plan(device)
    assert plan == transfer.TransferPlan(staging_device="cpu", pin_memory=True, non_blocking=True,
                                         copy_stream=True, prefetch=True)


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "mps", "meta"])
def test_other_devices_get_nothing_extra(device):
    plan = transfer.transfer_plan(device)
    assert not any([plan.pin_memory, plan.non_blocking, plan.copy_stream, plan.prefetch])
    assert plan.staging_device is None
    assert transfer.for_device(device) is None


def test_the_torch_backend_offers_no_transfer_on_the_cpu(torch_backend, torch_on_cpu):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    model.build(seed=0)
    model.compile(optimizer="sgd", loss="mse")
    assert model._training.trainer.batch_transfer(model.state) is None


def test_batch_transfer_moves_host_tensors_and_keeps_the_rest():
    moving = transfer.BatchTransfer("meta", transfer.TransferPlan(None, False, False, False, False))
    here = torch.ones(2, device="meta")
    host = torch.arange(3)
    moved = moving.ready(moving.issue([host, None, here, 5]))
    assert moved[0].device.type == "meta" and moved[0].shape == (3,) and moved[0].dtype == torch.int64
    assert moved[1] is None and moved[2] is here and moved[3] == 5


class RecordingTransfer:
    """Stands in for a device transfer: records the order of production, issue and hand-out."""

    def __init__(self, events, staging_device=None, prefetch=True):
        self.events = events
        self.staging_device = staging_device
        self.prefetch = prefetch

    def issue(self, leaves):
        self.events.append(("issue", leaves[0]))
        return [("moved", leaf) if leaf is not None else None for leaf in leaves]

    def ready(self, moved):
        return moved


def _source(events, count):
    for i in range(count):
        events.append(("produce", i))
        yield (i, {"a": i, "b": [i]}, None)


def test_the_next_batch_is_issued_before_the_current_one_is_handed_out():
    events: list = []
    for batch in on_device(_source(events, 4), RecordingTransfer(events)):
        events.append(("step", batch[0][1]))
    order = [e for e in events]
    for i in range(3):
        assert order.index(("issue", i + 1)) < order.index(("step", i))  # batch i+1 in flight during step i
    assert [e[1] for e in events if e[0] == "step"] == [0, 1, 2, 3]


def test_without_prefetch_each_batch_is_issued_when_it_is_needed():
    events: list = []
    for batch in on_device(_source(events, 3), RecordingTransfer(events, prefetch=False)):
        events.append(("step", batch[0][1]))
    assert events.index(("issue", 1)) > events.index(("step", 0))


def test_batch_structure_and_a_shards_window_survive_the_transfer():
    events: list = []
    a, b, c, d = (np.full((1,), i) for i in range(4))
    sharded = ShardedBatch((a, {"a": b, "b": [c, d]}, None), (8, 4, 16))
    (out,) = list(on_device([sharded], RecordingTransfer(events)))
    assert type(out) is ShardedBatch and out.window == (8, 4, 16)
    assert out[0] == ("moved", a) and out[2] is None
    assert out[1]["a"] == ("moved", b) and out[1]["b"][0] == ("moved", c) and out[1]["b"][1] == ("moved", d)


def test_no_transfer_hands_the_batches_on_unchanged():
    batches = [(np.zeros(2), None, None)]
    assert list(on_device(iter(batches), None))[0] is batches[0]


def test_per_batch_data_is_converted_on_the_staging_device(torch_backend):
    seen = []

    def source():
        for i in range(3):
            seen.append(convert._staging[0])
            yield np.full((2, 1), i, "float32"), np.zeros((2, 1), "float32")

    adapter = get_adapter(source())
    events: list = []
    batches = list(on_device(adapter.batches(0), RecordingTransfer(events, staging_device="cpu")))
    assert seen == ["cpu"] * 3 and convert._staging[0] is None
    assert [float(ops.to_numpy(b[0][1])[0, 0]) for b in batches] == [0.0, 1.0, 2.0]


def test_steps_per_epoch_with_prefetch_loses_no_batch():
    """The batch read ahead at an epoch's end is the first of the next epoch."""
    events: list = []
    gen = ((np.full((1,), i), None, None) for i in range(7))
    iterator = EpochIterator(get_adapter(gen), steps_per_epoch=3)
    seen = [[int(b[0][1][0]) for _, b in iterator.epoch(e, RecordingTransfer(events))] for e in range(3)]
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]
    assert iterator.ran_out


def test_fit_through_a_transfer_trains_the_same_weights(torch_backend, monkeypatch):
    """The non-blocking, prefetching path (minus CUDA's pinned memory and stream) gives the same
    weights as the plain loop, for array and generator data."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-1.0], [0.5]], "float32")).astype("float32")

    def trained(data):
        model = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation="tanh"), layers.Dense(1)])
        model.build(seed=0)
        model.compile(optimizer="adam", loss="mse", seed=0)
        if data == "arrays":
            model.fit(x, y, batch_size=5, epochs=2, verbose=0)
        else:
            model.fit([(x[i:i + 5], y[i:i + 5]) for i in range(0, 24, 5)], epochs=2, verbose=0)
        return [np.asarray(w) for w in model.get_weights()], model.predict(x, batch_size=7, verbose=0)

    plain = {data: trained(data) for data in ("arrays", "generator")}
    plan = transfer.TransferPlan(None, False, True, False, True)
    monkeypatch.setattr(transfer, "transfer_plan", lambda device: plan)
    for data in ("arrays", "generator"):
        weights, predicted = trained(data)
        for a, b in zip(weights, plain[data][0]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(predicted, plain[data][1])


def test_predict_through_a_transfer_keeps_a_stateful_rnns_states(torch_backend, monkeypatch):
    """The deferred fetch of predict's outputs still hands a stateful RNN's last states to the model."""
    x = np.random.default_rng(1).normal(size=(4, 3, 2)).astype("float32")

    def twice():
        model = ember.Sequential([ember.Input((3, 2), batch_size=2), layers.SimpleRNN(4, stateful=True)])
        model.build(seed=0)
        return model.predict(x, batch_size=2, verbose=0), model.predict(x, batch_size=2, verbose=0)

    plain = twice()
    monkeypatch.setattr(transfer, "transfer_plan", lambda device: transfer.TransferPlan(None, False, True, False, True))
    fetched = twice()
    assert not np.allclose(plain[0], plain[1])  # the states were carried into the second predict
    np.testing.assert_array_equal(fetched[0], plain[0])
    np.testing.assert_array_equal(fetched[1], plain[1])
