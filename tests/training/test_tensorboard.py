"""``callbacks.TensorBoard``: the event files are read back with TensorBoard's own reader
(``event_accumulator``), and what they hold is compared with ``fit``'s History and the model's
weights."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import ember
from ember import callbacks, distribute, layers, ops
from tests.tolerances import FLOAT32, FLOAT32_UNIT_ROUNDOFF

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
pytest.importorskip("tensorboardX")


def _read(directory):
    reader = event_accumulator.EventAccumulator(str(directory), size_guidance={
        event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0, event_accumulator.TENSORS: 0})
    reader.Reload()
    return reader


def _scalars(reader, tag):
    return [(event.step, event.value) for event in reader.Scalars(tag)]


def _model():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation="relu", name="hidden"),
                              layers.Dense(1, name="out")])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(0.05), loss="mse", metrics=["mae"], seed=0)
    return model


def _data(n=12):
    x = np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)
    return x, x @ np.array([[1.0], [-1.0], [0.5]], np.float32)


def test_epoch_scalars_histograms_and_validation(backend, tmp_path):
    x, y = _data()
    model = _model()
    board = callbacks.TensorBoard(tmp_path, histogram_freq=1)
    history = model.fit(x, y, batch_size=4, epochs=3, validation_data=(x[:6], y[:6]), verbose=0, callbacks=[board])
    train, validation = _read(tmp_path / "train"), _read(tmp_path / "validation")
    # Stored as float32 by the event format: compare at float32 resolution (one rounding: u relative).
    u = FLOAT32_UNIT_ROUNDOFF
    for name in ("loss", "mae"):
        steps, values = zip(*_scalars(train, f"epoch_{name}"))
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[name], rtol=u)
        steps, values = zip(*_scalars(validation, f"epoch_{name}"))
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[f"val_{name}"], rtol=u)
    np.testing.assert_allclose([v for _, v in _scalars(train, "epoch_learning_rate")], [0.05] * 3, rtol=u)
    assert not any(tag.startswith("batch_") for tag in train.Tags()["scalars"])  # update_freq="epoch"
    expected_tags = {f"{w.path}/histogram" for w in model.weights}
    assert expected_tags == {"hidden/kernel/histogram", "hidden/bias/histogram", "out/kernel/histogram",
                             "out/bias/histogram"}
    assert set(train.Tags()["histograms"]) == expected_tags
    last = train.Histograms("hidden/kernel/histogram")[-1]
    kernel = ops.to_numpy(model.state["params"]["hidden"]["kernel"])
    assert last.step == 2 and last.histogram_value.num == kernel.size
    np.testing.assert_allclose([last.histogram_value.min, last.histogram_value.max, last.histogram_value.sum],
                               [kernel.min(), kernel.max(), kernel.sum()], **FLOAT32)  # a float32 sum
    text = train.Tensors("keras/text_summary")[0].tensor_proto.string_val[0].decode()
    assert json.loads(text) == json.loads(model.to_json())


def test_batch_scalars_with_update_freq(tmp_path):
    x, y = _data()
    seen = []

    class Losses(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs["loss"])

    model = _model()
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[
        Losses(), callbacks.TensorBoard(tmp_path, update_freq=2, write_graph=False, write_steps_per_second=True)])
    train = _read(tmp_path / "train")
    # 3 batches per epoch, 6 in all: global batches 2, 4 and 6 are written.
    steps, values = zip(*_scalars(train, "batch_loss"))
    assert steps == (2, 4, 6)
    np.testing.assert_allclose(values, [seen[1], seen[3], seen[5]], rtol=FLOAT32_UNIT_ROUNDOFF)  # stored as float32
    assert [s for s, _ in _scalars(train, "epoch_steps_per_second")] == [0, 1]
    assert all(v > 0 for _, v in _scalars(train, "epoch_steps_per_second"))
    assert "keras/text_summary" not in train.Tags()["tensors"]
    assert not (tmp_path / "validation").exists()
    board = callbacks.TensorBoard(tmp_path, update_freq="batch")
    assert board.update_freq == 1


def test_only_the_main_rank_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(distribute, "is_main_process", lambda: False)
    x, y = _data()
    _model().fit(x, y, epochs=2, verbose=0, callbacks=[callbacks.TensorBoard(tmp_path / "logs", histogram_freq=1,
                                                                              update_freq=1)])
    assert not (tmp_path / "logs").exists()


def test_missing_writer_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    x, y = _data()
    model = _model()
    before = ops.to_numpy(model.state["params"]["out"]["kernel"]).copy()
    with pytest.raises(ImportError, match=r"ember\[tensorboard\]"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.TensorBoard(tmp_path)])
    np.testing.assert_array_equal(ops.to_numpy(model.state["params"]["out"]["kernel"]), before)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"update_freq": 0}, ValueError, "update_freq must be 'epoch', 'batch' or a positive int, received 0"),
    ({"update_freq": "often"}, ValueError, "update_freq"),
    ({"histogram_freq": -1}, ValueError, "histogram_freq must be a non-negative int, received -1"),
    ({"histogram_freq": 1.5}, ValueError, "histogram_freq"),
    ({"log_dir": 3}, TypeError, "log_dir must be a path, received 3"),
    ({"write_graph": "yes"}, TypeError, "write_graph must be a bool"),
    ({"write_images": True}, NotImplementedError, "write_images=True is not supported"),
    ({"profile_batch": 2}, NotImplementedError, "torch.profiler"),
    ({"embeddings_freq": 1}, NotImplementedError, "embeddings_freq=1"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        callbacks.TensorBoard(**kwargs)
