"""Host syncs on the per-step path of fit/evaluate/predict on torch: counted, bounded independently of the steps.

A host read of a CUDA tensor (``.item()``, ``bool(t)``, ``float(t)``, ``int(t)``, ``.cpu()``,
``.numpy()``, ``.tolist()``) waits for every queued kernel. These tests count such reads with a
hook on ``torch.Tensor`` while ``fit``, ``evaluate`` and ``predict`` run with ``verbose=0`` and no
callbacks, and check that the count does not grow with the number of steps. Tensors made from
Python data (``torch.tensor``, ``torch.as_tensor``: on a device, a blocking copy from pageable host
memory) are counted too, and must not be made in every step either.

This machine has no GPU, so the tests run on the CPU with the accelerator's decisions simulated:
the three functions that decide "reading this tensor on the host is free" (torch's
``_base.host_reads_free``, used by the ops' eager value checks and by ``to_numpy``, and the
training loop's ``reads_without_sync`` in the label check and the NaN watch) answer "no", and the
batch transfer is the CUDA one minus what needs CUDA (pinned memory, the copy stream): non-blocking
fetches, prefetching, one wait per predict. ``tests/test_cuda.py`` repeats the count on a real CUDA
device without any simulation when one is present.
"""

from __future__ import annotations

import collections
import importlib

import numpy as np
import pytest

import ember
from ember import layers
from ember.training import label_check, nonfinite_loss
from tests.tolerances import FLOAT32

torch = pytest.importorskip("torch")  # torch's own paths: a core-only install skips the file
# The torch backend's modules import torch: imported after the skip.
_base = importlib.import_module("ember.backends.torch._base")
transfer = importlib.import_module("ember.backends.torch.transfer")

# Every Tensor method that reads a value on the host (each is a sync on CUDA).
SYNC_METHODS = ("item", "__bool__", "__float__", "__int__", "__index__", "cpu", "numpy", "tolist")
# torch functions making a tensor from Python data: on a device, a blocking copy from the host.
CREATION_FUNCTIONS = ("tensor", "as_tensor")


class SyncCounter:
    """Counts host reads of torch tensors (and transfer waits) while ``active``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.active = False
        self.counts: collections.Counter = collections.Counter()
        for name in SYNC_METHODS:
            monkeypatch.setattr(torch.Tensor, name, self._counted(name, getattr(torch.Tensor, name)))
        monkeypatch.setattr(transfer.BatchTransfer, "host_ready",
                            self._counted("host_ready", transfer.BatchTransfer.host_ready))
        # Tensors made from Python data: on CUDA a blocking copy from pageable memory (a stream sync).
        self.created: collections.Counter = collections.Counter()
        for name in CREATION_FUNCTIONS:
            monkeypatch.setattr(torch, name, self._counted(name, getattr(torch, name), self.created))

    def _counted(self, name: str, method, counts=None):
        counts = self.counts if counts is None else counts

        def run(*args, **kwargs):
            if self.active:
                counts[name] += 1
            return method(*args, **kwargs)

        return run

    def count(self, action, *args, **kwargs) -> int:
        """The host reads while ``action(*args, **kwargs)`` runs (creations from Python data: ``created``)."""
        self.counts.clear()
        self.created.clear()
        self.active = True
        try:
            action(*args, **kwargs)
        finally:
            self.active = False
        return sum(self.counts.values())


@pytest.fixture
def simulated_accelerator(torch_backend, monkeypatch):
    """Host reads are not free (as on CUDA); batches go through a non-blocking transfer."""
    monkeypatch.setattr(_base, "host_reads_free", lambda device: False)
    monkeypatch.setattr(label_check, "reads_without_sync", lambda array: False)
    monkeypatch.setattr(nonfinite_loss, "reads_without_sync", lambda array: False)
    plan = transfer.TransferPlan(staging_device=None, pin_memory=False, non_blocking=True, copy_stream=False,
                                 prefetch=True)
    monkeypatch.setattr(transfer, "transfer_plan", lambda device: plan)
    return SyncCounter(monkeypatch)


def _model(optimizer):
    model = ember.Sequential([ember.Input((6,)), layers.Dense(8, activation="relu"), layers.Dropout(0.25),
                              layers.Dense(3)])
    model.build(seed=0)
    model.compile(optimizer=optimizer, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], seed=0)
    return model


def _data(steps, batch=4):
    rng = np.random.default_rng(0)
    return rng.normal(size=(steps * batch, 6)).astype("float32"), (np.arange(steps * batch) % 3).astype("int64")


# Per epoch: the loss and accuracy logs read at the epoch's end (2 tensors, each .cpu() + .numpy()),
# and there the deferred running losses (1 column) and, for data other than arrays, the deferred
# label flags and first bad values (2 columns), each one .cpu() + .numpy(). Per fit call: the loss
# on the first batch (Trainer.check_first_batch, on a stand-in for the predictions: the sparse
# loss's label dtype and range checks, 2 reads of .cpu() + .numpy()), for Adam the optimizer's step
# counter once (its bias corrections are then counted on the host: torch's _StepCounter), and for
# arrays the check of every label at once (SparseLabelCheck.vouch: their minimum and maximum, one
# .cpu() + .numpy(); no batch is checked after it). Nothing depends on the number of steps.
FIT_SYNCS_PER_EPOCH = {"arrays": 2 * 2 + 1 * 2, "generator": 2 * 2 + 3 * 2}
FIT_SYNCS_PER_CALL = {"sgd": 2 * 2, "adam": 2 * 2 + 1}
VOUCH_SYNCS = {"arrays": 2, "generator": 0}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("source", ["arrays", "generator"])
def test_fit_syncs_do_not_grow_with_the_steps(simulated_accelerator, optimizer, source):
    counter = simulated_accelerator
    counts, created = {}, {}
    for steps in (3, 12):
        x, y = _data(steps)
        model = _model(optimizer)
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)  # first-use work (building steps) not counted
        if source == "arrays":
            counts[steps] = counter.count(model.fit, x, y, batch_size=4, epochs=2, verbose=0)
        else:
            batches = [(x[i:i + 4], y[i:i + 4]) for i in range(0, len(x), 4)]
            counts[steps] = counter.count(model.fit, batches, epochs=2, verbose=0)
        created[steps] = sum(counter.created.values())
    assert counts[3] == counts[12]
    assert created[3] == created[12], "a tensor is made from Python data in every step"
    expected = 2 * FIT_SYNCS_PER_EPOCH[source] + FIT_SYNCS_PER_CALL[optimizer] + VOUCH_SYNCS[source]
    assert counts[12] == expected, dict(counter.counts)


def test_evaluate_and_predict_syncs_do_not_grow_with_the_steps(simulated_accelerator):
    counter = simulated_accelerator
    evaluated, predicted = {}, {}
    for steps in (3, 12):
        x, y = _data(steps)
        model = _model("sgd")
        model.evaluate(x, y, batch_size=4, verbose=0)
        evaluated[steps] = counter.count(model.evaluate, x, y, batch_size=4, verbose=0)
        predicted[steps] = counter.count(model.predict, x, batch_size=4, verbose=0)
    assert evaluated[3] == evaluated[12]
    assert predicted[3] == predicted[12]
    # predict: one wait for every output copy, then the joined output read once (.cpu() + .numpy()).
    assert predicted[12] == 3, dict(counter.counts)


def test_predict_outputs_are_unchanged_by_the_deferred_fetch(simulated_accelerator):
    x, y = _data(5)
    model = _model("sgd")
    fetched = model.predict(x, batch_size=4, verbose=0)
    weights = [np.asarray(w) for w in model.get_weights()]
    hidden = np.maximum(x.astype(np.float64) @ weights[0] + weights[1], 0.0)
    expected = hidden @ weights[2] + weights[3]
    np.testing.assert_allclose(fetched, expected, **FLOAT32)


def test_the_count_sees_a_per_step_read(simulated_accelerator):
    """The hook is not blind: a callback reading every batch's logs adds reads per step."""
    counter = simulated_accelerator

    class ReadsLogs(ember.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            logs["loss"]

    counts = {}
    for steps in (3, 12):
        x, y = _data(steps)
        model = _model("sgd")
        counts[steps] = counter.count(model.fit, x, y, batch_size=4, epochs=1, verbose=0, callbacks=[ReadsLogs()])
    assert counts[12] > counts[3]
