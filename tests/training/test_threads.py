"""Threads (issue #38, items 5-7): what runs at once on one process is either correct or refused.

* tapes in two threads on one model: each thread's gradients are the serial ones, bit for bit;
* ``predict`` beside ``fit`` on one model: every prediction is the model's output under one of
  the weight sets the serial fit went through, and the fit ends on the serial fit's weights;
* two ``fit``s on two models in two threads: each ends on its serial fit's weights;
* a second ``fit``/``train_on_batch`` of a model that trains in another thread: a clear
  RuntimeError, and the first fit's weights are still the serial ones;
* ``ember.set_backend`` from another thread while a model call runs: a clear RuntimeError naming
  the busy thread and call; the active backend is unchanged.

Each case runs ``REPEATS`` times on a tiny model (races show up as a wrong result in some runs).
The references are the same computations run serially in the main thread (exact equality: the
same ops on the same inputs give the same bits).
"""

from __future__ import annotations

import functools
import sys
import threading

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.callbacks import LambdaCallback
from tests.tolerances import FLOAT32

REPEATS = 20
WAIT_S = 30  # generous bound for a thread to reach a point; a failure, not a hang, when it passes


@pytest.fixture(autouse=True)
def _frequent_thread_switches():
    """Switch threads every few bytecodes (CPython's default is 5 ms, longer than a tiny model's
    whole call): the threads then interleave inside each other's steps, where races show."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(16, 3)).astype("float32"), rng.normal(size=(16, 1)).astype("float32")


def _model(name: str = "net", dtype: str = "float32") -> ember.Model:
    model = ember.Sequential([layers.Input((3,), dtype=dtype), layers.Dense(4, activation="tanh", dtype=dtype),
                              layers.Dense(1, dtype=dtype)], name=name)
    model.compile(optimizer="adam", loss="mse")
    model.build(seed=0)
    return model


def _run(*targets) -> list:
    """Run each target in its own thread; the exceptions they raised (none expected)."""
    errors: list = []

    def guarded(target):
        def run():
            try:
                target()
            except BaseException as error:  # noqa: BLE001 - reported by the test
                errors.append(error)
        return run

    threads = [threading.Thread(target=guarded(t), name=f"worker-{i}") for i, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive(), "a worker thread hung"
    return errors


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in zip(a, b))


def test_gradient_tapes_in_two_threads_give_the_serial_gradients(backend):
    model = _model(dtype="float64")  # bit-equal in float64 on every backend
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(8, 3)) for _ in range(2)]

    def gradients(x):
        with ember.GradientTape() as tape:
            loss = ops.mean(ops.square(model(x)))
        return [ops.to_numpy(g) for g in tape.gradient(loss, model.trainable_variables)]

    serial = [gradients(x) for x in inputs]
    for _ in range(REPEATS):
        got: list = [None, None]
        assert _run(*[functools.partial(_repeat_into, got, i, gradients, inputs[i]) for i in range(2)]) == []
        assert _same(got[0], serial[0]) and _same(got[1], serial[1])


def _repeat_into(results: list, i: int, function, argument) -> None:
    for _ in range(3):
        results[i] = function(argument)


@pytest.mark.parametrize("reader", ["predict", "predict_on_batch", "model(x)"])
def test_predict_beside_fit_sees_whole_steps_and_the_fit_is_the_serial_one(backend, reader):
    # A new model per run: a fit continues the optimizer state of the model's previous fit.
    x, y = _data()
    model = _model()
    start = model.get_weights()
    seen: list = []  # the weights after each step of the serial fit
    record = LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(model.get_weights()))
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0, callbacks=[record])
    trained = model.get_weights()
    allowed = []
    for weights in [start] + seen:
        model.set_weights(weights)
        allowed.append(model.predict(x, verbose=0, batch_size=16))
    for _ in range(REPEATS):
        model = _model()
        predictions: list = []
        fit = functools.partial(model.fit, x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
        assert _run(fit, functools.partial(_predict_into, predictions, model, x, reader)) == []
        assert _same(model.get_weights(), trained)
        assert all(any(np.array_equal(p, a) for a in allowed) for p in predictions)


def _predict_into(predictions: list, model, x, reader: str = "predict") -> None:
    for _ in range(3):
        if reader == "predict":
            predictions.append(model.predict(x, verbose=0, batch_size=16))
        elif reader == "predict_on_batch":
            predictions.append(np.asarray(ops.convert_to_numpy(model.predict_on_batch(x))))
        else:
            predictions.append(np.asarray(ops.convert_to_numpy(model(x))))


def test_two_fits_on_two_models_give_the_serial_weights(backend):
    data = [_data(0), _data(1)]
    expected = []
    for name, (x, y) in zip(("first", "second"), data):
        model = _model(name)
        model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
        expected.append(model.get_weights())
    for _ in range(REPEATS):
        models = [_model("first"), _model("second")]
        fits = [functools.partial(m.fit, *d, epochs=2, batch_size=8, shuffle=False, verbose=0)
                for m, d in zip(models, data)]
        assert _run(*fits) == []
        assert _same(models[0].get_weights(), expected[0]) and _same(models[1].get_weights(), expected[1])


def _blocked_in(call):
    """A callback that signals ``inside`` on its first batch and then waits for ``release``."""
    inside, release = threading.Event(), threading.Event()

    def wait(batch, logs=None):
        if batch == 0:
            inside.set()
            assert release.wait(WAIT_S), "the main thread never released the worker"

    return LambdaCallback(**{f"on_{call}_batch_begin": wait}), inside, release


def test_a_second_fit_of_a_model_training_in_another_thread_is_refused(backend):
    x, y = _data()
    model = _model("busy_net")
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    expected = model.get_weights()
    for _ in range(REPEATS):
        model = _model("busy_net")
        callback, inside, release = _blocked_in("train")
        first = functools.partial(model.fit, x, y, epochs=1, batch_size=8, shuffle=False, verbose=0,
                                  callbacks=[callback])
        worker = threading.Thread(target=first, name="trainer-thread")
        worker.start()
        try:
            assert inside.wait(WAIT_S)
            with pytest.raises(RuntimeError, match=r"model 'busy_net' is already training in another thread "
                                                   r"\('trainer-thread', in fit\)"):
                model.fit(x, y, epochs=1, verbose=0)
            with pytest.raises(RuntimeError, match="already training in another thread"):
                model.train_on_batch(x, y)
        finally:
            release.set()
            worker.join(WAIT_S)
        assert not worker.is_alive()
        assert _same(model.get_weights(), expected)  # the refused calls changed nothing
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)  # free again once the first returned


def _call_into(out: list, function) -> None:
    out.append(function())


def test_set_backend_from_another_thread_during_a_model_call_is_refused(backend):
    x, _ = _data()
    model = _model("predicting_net")
    expected = model.predict(x, verbose=0, batch_size=8)
    other = "numpy" if backend != "numpy" else "torch"
    for _ in range(REPEATS):
        callback, inside, release = _blocked_in("predict")
        out: list = []
        predict = functools.partial(model.predict, x, verbose=0, batch_size=8, callbacks=[callback])
        worker = threading.Thread(target=functools.partial(_call_into, out, predict), name="predict-thread")
        worker.start()
        try:
            assert inside.wait(WAIT_S)
            with pytest.raises(RuntimeError, match=r"thread 'predict-thread' is inside predict of model "
                                                   r"'predicting_net'.*switch backends only when no model"):
                ember.set_backend(other)
            assert ember.get_backend() == backend
        finally:
            release.set()
            worker.join(WAIT_S)
        assert not worker.is_alive()
        np.testing.assert_array_equal(out[0], expected)
    with ember.using_backend(other):  # nothing runs any more: switching works again
        assert ember.get_backend() == other
    assert ember.get_backend() == backend


def test_ops_in_another_thread_during_a_backend_switch_give_a_result_or_a_clear_error(backend):
    # A raw ops loop is no model call, so the switch is not refused; an op called half-way through
    # the switch raises a RuntimeError saying so (it used to forward to itself: a bare RecursionError).
    # An array made by one backend's op and passed to the next op after the switch is the other
    # backend's array: the clear TypeError every op gives for it (naming both backends).
    other = "numpy" if backend != "numpy" else "torch"
    x = np.arange(4.0, dtype="float32")
    stop = threading.Event()
    outcomes: list = []
    worker = threading.Thread(target=functools.partial(_ops_until, stop, x, outcomes), name="ops-thread")
    worker.start()
    try:
        for i in range(REPEATS):
            ember.set_backend(other if i % 2 == 0 else backend)
    finally:
        ember.set_backend(backend)
        stop.set()
        worker.join(WAIT_S)
    assert not worker.is_alive()
    expected = float(np.exp(x).sum())
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            switching = isinstance(outcome, RuntimeError) and "switching the backend" in str(outcome)
            foreign = isinstance(outcome, TypeError) and "but the active backend is" in str(outcome)
            assert switching or foreign, repr(outcome)
        else:
            np.testing.assert_allclose(outcome, expected, **FLOAT32)


def _ops_until(stop: threading.Event, x: np.ndarray, outcomes: list) -> None:
    while not stop.is_set() and len(outcomes) < 10_000:
        try:
            outcomes.append(float(ops.to_numpy(ops.sum(ops.exp(ops.convert_to_tensor(x))))))
        except Exception as error:  # noqa: BLE001 - judged by the test
            outcomes.append(error)
