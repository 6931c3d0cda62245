"""Issue #38: out-of-range Embedding indices, empty batches and binary labels outside [0, 1].

Each raises a clear ValueError on every backend (inside MLX's compiled step too, where the
check runs before the step), and changes nothing: no optimizer step is taken.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import layers, losses, ops, optimizers
from ember.training import label_check
from tests.helpers import same_state, state_snapshot


def _embedding_model():
    model = ember.Sequential([ember.Input((2,), dtype="int32"), layers.Embedding(10, 3, name="tokens"),
                              layers.Flatten(), layers.Dense(1)])
    model.compile(optimizer=optimizers.Adam(0.01), loss="mse", seed=0)
    return model


def _ids(bad_row, rows=40):
    x = np.tile(np.array([[1, 2]], "int32"), (rows, 1))
    x[-1] = bad_row
    return x, np.zeros((rows, 1), "float32")


@pytest.mark.parametrize("bad", [15, 1000000, -1])
@pytest.mark.parametrize("call", ["predict", "evaluate", "fit", "generator fit", "train_on_batch", "eager"])
def test_an_embedding_index_out_of_range_raises_and_changes_nothing(backend, call, bad):
    model = _embedding_model()
    model.fit(*_ids([1, 2], rows=8), batch_size=4, epochs=1, verbose=0)
    before = state_snapshot(model)
    x, y = _ids([1, bad])
    calls = {
        "predict": lambda: model.predict(x, batch_size=4, verbose=0),
        "evaluate": lambda: model.evaluate(x, y, batch_size=4, verbose=0),
        "fit": lambda: model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0),
        "generator fit": lambda: model.fit(((x[i:i + 4], y[i:i + 4]) for i in range(0, 40, 4)), epochs=1, verbose=0),
        "train_on_batch": lambda: model.train_on_batch(x[-4:], y[-4:]),
        "eager": lambda: model(x[-4:]),
    }
    with pytest.raises(ValueError, match=rf"'tokens'.*\[0, 10\).*{bad}"):
        calls[call]()
    if call != "generator fit":  # a generator's good batches before the bad one were trained on
        assert same_state(state_snapshot(model), before)


def test_an_out_of_range_index_on_mlx_is_a_python_error_not_a_crash():
    """In a subprocess: a segfault (the bug) must fail this test, not kill pytest."""
    pytest.importorskip("mlx.core")
    script = textwrap.dedent("""
        import numpy as np, ember
        from ember import layers
        ember.set_backend("mlx")
        model = ember.Sequential([ember.Input((2,), dtype="int32"), layers.Embedding(10, 3)])
        model.compile(optimizer="adam", loss="mse")
        for call in (lambda: model.predict(np.array([[1, 1000000]]), verbose=0),
                     lambda: model.fit(np.array([[1, 2]] * 8 + [[1, 1000000]]), np.zeros((9, 2, 3)), batch_size=2,
                                       shuffle=False, verbose=0),
                     lambda: model.evaluate(np.array([[1, 2]] * 8 + [[1, 1000000]]), np.zeros((9, 2, 3)),
                                            batch_size=2, verbose=0)):
            try:
                call()
            except ValueError as error:
                assert "1000000" in str(error), error
            else:
                raise SystemExit("no error")
        print("all raised")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # a signal gives a negative code
    assert "all raised" in done.stdout


@pytest.mark.parametrize("call", ["train_on_batch", "test_on_batch", "predict_on_batch"])
def test_an_empty_batch_is_refused_without_a_step(backend, call):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(2)])
    model.compile(optimizer=optimizers.Adam(0.01), loss="mse", seed=0)
    x, y = np.ones((4, 4), "float32"), np.zeros((4, 2), "float32")
    model.train_on_batch(x, y)
    before, iterations = state_snapshot(model), int(model.optimizer.iterations)
    args = (x[:0],) if call == "predict_on_batch" else (x[:0], y[:0])
    with pytest.raises(ValueError, match=rf"{call}: received an empty batch \(x of shape \(0, 4\)\)"):
        getattr(model, call)(*args)
    assert same_state(state_snapshot(model), before)
    assert int(model.optimizer.iterations) == iterations


@pytest.mark.parametrize("call", ["fit", "evaluate"])
def test_an_empty_generator_batch_is_refused_before_its_step(backend, call):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(2)])
    model.compile(optimizer=optimizers.Adam(0.01), loss="mse", seed=0)
    model.build(seed=0)
    x, y = np.ones((4, 4), "float32"), np.zeros((4, 2), "float32")
    before = state_snapshot(model)
    batches = [(x[:0], y[:0]), (x, y)]
    with pytest.raises(ValueError, match=rf"{call}: .*batch 0 \(0-based\): received an empty batch"):
        getattr(model, call)(iter(batches), verbose=0)
    assert same_state(state_snapshot(model), before)
    assert int(model.optimizer.iterations) == 0


BINARY_LOSSES = {
    "BinaryCrossentropy": lambda: losses.BinaryCrossentropy(),
    "BinaryFocalCrossentropy": lambda: losses.BinaryFocalCrossentropy(),
    "binary_crossentropy (function)": lambda: losses.binary_crossentropy,
    "'binary_crossentropy' (string)": lambda: "binary_crossentropy",
}


def _binary_model(loss):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=optimizers.Adam(0.01), loss=loss, seed=0)
    model.build(seed=0)
    return model


@pytest.mark.parametrize("loss", list(BINARY_LOSSES), ids=list(BINARY_LOSSES))
@pytest.mark.parametrize("data", ["arrays", "generator"])
def test_binary_labels_outside_zero_one_raise(backend, loss, data):
    model = _binary_model(BINARY_LOSSES[loss]())
    before = state_snapshot(model)
    x, y = np.ones((4, 2), "float32"), np.array([[2.0], [0.0], [1.0], [0.0]], "float32")
    source = {"x": x, "y": y, "batch_size": 2} if data == "arrays" else {"x": iter([(x, y)])}
    with pytest.raises(ValueError, match=r"binary.*labels must be in \[0, 1\].*received labels in \[0\.0, 2\.0\]"):
        model.fit(**source, epochs=1, shuffle=False, verbose=0)
    if label_check.reads_without_sync(ops.convert_to_tensor(y)):  # on a GPU the check waits for the next sync
        assert same_state(state_snapshot(model), before)


def test_binary_and_class_labels_out_of_range_raise_from_the_device_record(backend, monkeypatch):
    """On an accelerator the flags and culprits wait on the device (one record per output: a binary loss
    keeps its labels' [min, max], a class loss the first bad index) and raise at the epoch's end, naming
    the first bad batch and its output."""
    monkeypatch.setattr(label_check, "reads_without_sync", lambda array: False)
    inputs = ember.Input((2,))
    model = ember.Model(inputs, {"p": layers.Dense(1, activation="sigmoid", name="p")(inputs),
                                 "c": layers.Dense(3, name="c")(inputs)})
    model.compile(optimizer="sgd", loss={"p": "binary_crossentropy",
                                         "c": losses.SparseCategoricalCrossentropy(from_logits=True)})
    x = np.ones((6, 2), "float32")
    binary, classes = np.zeros((6, 1), "float32"), np.zeros((6,), "int64")
    binary[3], classes[5] = 2.0, 7  # batch 1 (binary), batch 2 (class)
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 1 \(0-based\) \(output 'p'\).*"
                                         r"labels must be in \[0, 1\].*received labels in \[0\.0, 2\.0\]"):
        model.fit(x, {"p": binary, "c": classes}, batch_size=2, epochs=1, shuffle=False, verbose=0)
    binary[3] = 1.0
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 2 \(0-based\) \(output 'c'\).*received 7"):
        model.fit(x, {"p": binary, "c": classes}, batch_size=2, epochs=1, shuffle=False, verbose=0)


@pytest.mark.parametrize("loss", list(BINARY_LOSSES), ids=list(BINARY_LOSSES))
def test_soft_binary_labels_and_label_smoothing_are_accepted(backend, loss):
    model = _binary_model(BINARY_LOSSES[loss]())
    x, y = np.ones((4, 2), "float32"), np.array([[0.0], [0.3], [1.0], [0.75]], "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    smoothed = _binary_model(losses.BinaryCrossentropy(label_smoothing=0.1))
    smoothed.fit(x, np.array([[0.0], [1.0], [1.0], [0.0]], "float32"), epochs=1, verbose=0)
