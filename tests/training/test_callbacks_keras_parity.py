"""Callback hooks receive what Keras 3 gives them: the same hooks, in the same order, with the
same arguments; ``logs`` always a dict (``{}`` where Keras has nothing to report);
``self.model`` and ``self.params``. The reference is Keras 3 itself (torch backend)."""

from __future__ import annotations

import collections.abc
import os

import numpy as np
import pytest

import ember
from ember import callbacks, layers

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_test_begin", "on_test_end",
          "on_predict_begin", "on_predict_end", "on_train_batch_begin", "on_train_batch_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_batch_begin", "on_predict_batch_end")


def _recorder_class(base):
    """A callback of ``base`` (Keras's or Ember's Callback class) that records every hook's arguments."""

    def make(hook):
        def method(self, *args, logs=None):
            if logs is None and args and not isinstance(args[-1], int):
                *args, logs = args
            assert isinstance(logs, collections.abc.Mapping), f"{hook}: logs={logs!r}"
            keys = sorted(k for k in logs if k != "outputs")
            self.calls.append((hook, tuple(args), keys, "outputs" in logs))
            # Keras's logs.keys() idiom works everywhere (the crash with logs=None).
            list(logs.keys())
        return method

    namespace = {hook: make(hook) for hook in _HOOKS}

    def __init__(self):
        base.__init__(self)
        self.calls = []

    namespace["__init__"] = __init__
    return type("Recorder", (base,), namespace)


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 3)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))


def _run(module, model, recorder):
    x, y = _data()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x[:6], y[:6]), verbose=0, callbacks=[recorder])
    fit_params = dict(recorder.params)
    model.evaluate(x, y, batch_size=5, verbose=0, callbacks=[recorder])
    evaluate_params = dict(recorder.params)
    model.predict(x, batch_size=4, verbose=0, callbacks=[recorder])
    return recorder.calls, fit_params, evaluate_params, recorder.model is model


def test_hooks_arguments_and_logs_match_keras(backend):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    expected = _run(keras, keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]),
                    _recorder_class(keras.callbacks.Callback)())
    got = _run(ember, ember.Sequential([ember.Input((3,)), layers.Dense(1)]), _recorder_class(callbacks.Callback)())
    assert got[0] == expected[0]
    assert got[1:] == expected[1:]
    assert got[1] == {"verbose": 0, "epochs": 2, "steps": 3}


def test_callback_list_gives_every_hook_a_dict():
    seen = []
    hooks = callbacks.CallbackList([callbacks.LambdaCallback(
        on_train_begin=lambda logs: seen.append(logs), on_epoch_begin=lambda epoch, logs: seen.append(logs),
        on_train_batch_begin=lambda batch, logs: seen.append(logs))])
    hooks.on_train_begin()
    hooks.on_epoch_begin(0)
    hooks.on_train_batch_begin(0)
    assert seen == [{}, {}, {}]
