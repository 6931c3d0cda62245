"""Per-batch checks of ``fit``/``evaluate``: sparse labels out of range, the first NaN/inf loss."""

from __future__ import annotations

import warnings

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.training import deferred_reads, label_check
from ember.training.nonfinite_loss import NonFiniteLossWarning

X = np.random.default_rng(0).normal(size=(12, 4)).astype("float32")


def _labels(bad_index=None, value=7):
    y = np.array([0, 1, 2] * 4)
    if bad_index is not None:
        y[bad_index] = value
    return y


def _model(loss=None, metrics=None):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(3, name="logits")])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(0.1),
                  loss=loss or ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=metrics, seed=0)
    return model


def _weights(model):
    return optree.tree_map(lambda a: np.array(ops.to_numpy(a)), model.state)


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(optree.tree_leaves(a), optree.tree_leaves(b)))


def _one_step_weights(x, y):
    model = _model()
    model.fit(x, y, batch_size=4, epochs=1, steps_per_epoch=1, shuffle=False, verbose=0)
    return _weights(model)


@pytest.mark.parametrize("value", [7, 3, -1])
def test_fit_rejects_a_bad_label_in_a_later_batch_before_its_step(backend, value, torch_on_cpu):
    model = _model()
    y = _labels(bad_index=5, value=value)  # batch 1 of 3
    with pytest.raises(ValueError, match=rf"fit: epoch 0, batch 1 \(0-based\): sparse_categorical_crossentropy: "
                                         rf"class indices must be in \[0, 3\).*received {value}"):
        model.fit(X, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    # Checked before that batch's step (on the CPU): exactly one step was taken.
    assert _same(_weights(model), _one_step_weights(X, y))


def test_fit_checks_every_epoch_with_shuffling(backend):
    model = _model()
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch \d \(0-based\).*received 9"):
        model.fit(X, _labels(bad_index=11, value=9), batch_size=4, epochs=2, verbose=0)


def _penalty(y_true, y_pred):  # a loss that does not read the labels
    return ops.mean(ops.square(y_pred), axis=-1)


def _metric_only_model():
    return _model(loss=_penalty, metrics=["sparse_categorical_accuracy"])


def test_a_sparse_metric_alone_is_checked(backend):
    model = _metric_only_model()
    with pytest.raises(ValueError, match=r"evaluate: batch 2 \(0-based\): sparse_categorical_accuracy: .*"
                                         r"received 5"):
        model.evaluate(X, _labels(bad_index=9, value=5), batch_size=4, verbose=0)


def test_evaluate_and_validation_check_every_batch(backend):
    model = _model(metrics=["accuracy"])
    before = _weights(model)
    with pytest.raises(ValueError, match=r"evaluate: batch 2 \(0-based\): sparse_categorical_crossentropy.*"
                                         r"received 4"):
        model.evaluate(X, _labels(bad_index=10, value=4), batch_size=4, verbose=0)
    assert _same(_weights(model), before)
    with pytest.raises(ValueError, match=r"fit \(validation\): batch 1 \(0-based\).*received -2"):
        model.fit(X, _labels(), batch_size=4, epochs=1, verbose=0,
                  validation_data=(X, _labels(bad_index=6, value=-2)))


def test_ignore_class_is_allowed(backend):
    model = _model(loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1))
    model.fit(X, _labels(bad_index=6, value=-1), batch_size=4, epochs=1, shuffle=False, verbose=0)
    with pytest.raises(ValueError, match="received -2"):
        model.fit(X, _labels(bad_index=6, value=-2), batch_size=4, epochs=1, shuffle=False, verbose=0)


class _CountedBatchChecks:
    """Counts the per-batch label checks and the whole-data checks of the loops."""

    def __init__(self, monkeypatch):
        self.batches, self.vouched = 0, []
        per_batch, vouch = label_check.SparseLabelCheck.__call__, label_check.SparseLabelCheck.vouch

        def counted_call(check, *args):
            self.batches += 1
            return per_batch(check, *args)

        def counted_vouch(check, y):
            self.vouched.append(vouch(check, y))
            return self.vouched[-1]

        monkeypatch.setattr(label_check.SparseLabelCheck, "__call__", counted_call)
        monkeypatch.setattr(label_check.SparseLabelCheck, "vouch", counted_vouch)


def test_array_labels_in_range_are_checked_once_not_per_batch(backend, monkeypatch):
    """Array data: one check of every label (their minimum and maximum) per fit/evaluate/validation;
    all in range, no batch is checked again. The same training as with the per-batch checks."""
    counted = _CountedBatchChecks(monkeypatch)
    model = _model(metrics=["accuracy"])
    model.fit(X, _labels(), batch_size=4, epochs=2, verbose=0, validation_data=(X, _labels()))
    model.evaluate(X, _labels(), batch_size=4, verbose=0)
    assert counted.vouched == [True] * 4 and counted.batches == 0  # fit, its two validations, evaluate
    trained = _weights(model)
    monkeypatch.setattr(label_check.SparseLabelCheck, "vouch", lambda check, y: False)  # the per-batch checks
    reference = _model(metrics=["accuracy"])
    reference.fit(X, _labels(), batch_size=4, epochs=2, verbose=0, validation_data=(X, _labels()))
    assert counted.batches == 3 * 2 + 3 * 2 and _same(trained, _weights(reference))


@pytest.mark.parametrize(("labels", "loss_kwargs"), [
    (_labels(bad_index=6, value=-1), {"ignore_class": -1}),  # outside [0, 3), allowed: per batch
    (_labels(bad_index=6, value=9), {}),  # out of range: per batch, which names the batch
], ids=["ignore_class", "out_of_range"])
def test_labels_the_whole_data_check_cannot_vouch_for_are_checked_per_batch(backend, monkeypatch, labels,
                                                                           loss_kwargs):
    counted = _CountedBatchChecks(monkeypatch)
    model = _model(loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True, **loss_kwargs))
    if loss_kwargs:  # trains
        model.fit(X, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
    else:
        with pytest.raises(ValueError, match=r"fit: epoch 0, batch 1 \(0-based\).*received 9"):
            model.fit(X, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert counted.vouched == [False] and counted.batches >= 1


def test_float_labels_with_nan_and_generators_are_checked_per_batch(backend, monkeypatch):
    counted = _CountedBatchChecks(monkeypatch)
    checker = label_check.SparseLabelCheck({0: ("sparse_categorical_crossentropy", None)}, ["out"], {0: 3}, "fit")
    assert not checker.vouch(ops.convert_to_tensor(np.array([0.0, np.nan, 1.0], "float32")))
    assert checker.vouch(ops.convert_to_tensor(np.array([0.0, 2.0, 1.0], "float32"))) and checker.vouched
    counted.vouched.clear()
    model = _model()
    batches = [(X[i:i + 4], _labels()[i:i + 4]) for i in range(0, 12, 4)]
    model.fit(batches, epochs=1, verbose=0)  # a list of batches: no whole data to check at once
    assert counted.vouched == [] and counted.batches == 3


def test_deferred_flags_raise_at_the_epoch_end_naming_the_batch(backend, monkeypatch):
    """Where a read would sync (an accelerator), flags wait on the device until the epoch ends."""
    monkeypatch.setattr(label_check, "reads_without_sync", lambda array: False)
    model = _metric_only_model()  # the metric does not check values itself (the fused losses do)
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 1 \(0-based\).*received 8"):
        model.fit(X, _labels(bad_index=4, value=8), batch_size=4, epochs=1, shuffle=False, verbose=0)
    # Over several chunks of deferred values (stacked on the device), the first bad batch is named.
    monkeypatch.setattr(deferred_reads, "CHUNK", 2)
    model = _metric_only_model()
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 4 \(0-based\).*received -5"):
        model.fit(X, _labels(bad_index=9, value=-5), batch_size=2, epochs=1, shuffle=False, verbose=0)


class _ReadsLogs(ember.callbacks.Callback):
    """Reads every batch's logs (a host sync on an accelerator, as the progress bar's reads are)."""

    def on_train_batch_end(self, batch, logs=None):
        logs["loss"]


def test_deferred_flags_are_read_where_logs_are_read(backend, monkeypatch):
    """A callback reading a batch's logs syncs anyway: the flags kept so far are read there, so the bad
    batch raises right after its own step (the weights are those of the steps taken, batch 1's included)."""
    monkeypatch.setattr(label_check, "reads_without_sync", lambda array: False)
    model = _metric_only_model()
    y = _labels(bad_index=4, value=8)
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 1 \(0-based\).*received 8"):
        model.fit(X, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[_ReadsLogs()])
    reference = _metric_only_model()  # its loss ignores the labels: the same steps with valid ones
    reference.fit(X, _labels(), batch_size=4, epochs=1, steps_per_epoch=2, shuffle=False, verbose=0)
    assert _same(_weights(model), _weights(reference))
    one_step = _metric_only_model()
    one_step.fit(X, _labels(), batch_size=4, epochs=1, steps_per_epoch=1, shuffle=False, verbose=0)
    assert not _same(_weights(model), _weights(one_step))


def _nan_data(row=5):
    x = X.copy()
    x[row, 0] = np.nan
    return x


def test_first_nan_loss_warns_naming_epoch_and_batch(backend):
    model = _model()
    with pytest.warns(NonFiniteLossWarning, match=r"loss is nan at epoch 0, batch 1 \(0-based\)") as caught:
        model.fit(_nan_data(row=5), _labels(), batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert len([w for w in caught if w.category is NonFiniteLossWarning]) == 1  # once per fit


def test_nan_watch_can_be_an_error_or_silenced(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteLossWarning)
        with pytest.raises(NonFiniteLossWarning, match="epoch 0, batch 2"):
            _model().fit(_nan_data(row=9), _labels(), batch_size=4, epochs=1, shuffle=False, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", NonFiniteLossWarning)
        _model().fit(_nan_data(row=9), _labels(), batch_size=4, epochs=1, shuffle=False, verbose=0)


def test_deferred_nan_watch_finds_the_first_bad_step(backend, monkeypatch):
    from ember.training import nonfinite_loss

    monkeypatch.setattr(nonfinite_loss, "reads_without_sync", lambda array: False)
    with pytest.warns(NonFiniteLossWarning, match=r"epoch 1, batch 2 \(0-based\)"):
        x = X.copy()
        model = _model()
        model.fit(x, _labels(), batch_size=4, epochs=1, shuffle=False, verbose=0)
        x[10, 1] = np.inf
        model.fit(x, _labels(), batch_size=4, epochs=2, initial_epoch=1, shuffle=False, verbose=0)


def test_terminate_on_nan_is_unchanged_and_silences_the_watch(backend, capsys):
    model = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteLossWarning)
        model.fit(_nan_data(row=5), _labels(), batch_size=4, epochs=2, shuffle=False, verbose=0,
                  callbacks=[ember.callbacks.TerminateOnNaN()])
    assert "TerminateOnNaN: invalid loss (nan) at epoch 1, batch 1" in capsys.readouterr().out
    assert np.isfinite(optree.tree_leaves(_weights(model))[0]).all()
