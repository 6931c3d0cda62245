"""Tapes in two threads, with the interleavings that once broke them forced by events (issue #38).

* NumPy engine: a rule of one thread's backward pass asks :func:`~ember.autodiff.rules.needs`
  which arguments want a cotangent while another thread's backward pass is in the middle of a
  rule with other flags. The flags used to be a module global, so the first thread read the
  second's ``(False, True)`` of a first-layer ``matmul`` and dropped the cotangent of its
  hidden activations: ``None`` gradients for the first layer's weights (seen once in a
  loaded full-suite run of ``tests/training/test_threads.py``). They are per thread now.
* Every backend: thread A's tape records while thread B starts and stops a tape of its
  own (the last other tape to stop must not unbind A's recorders), then A computes.

The reference is the same computation run serially in the main thread: exact equality (the
same ops on the same inputs in float64 give the same bits).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.autodiff import rules

WAIT_S = 30  # generous bound for a thread to reach a point; a failure, not a hang, when it passes


@pytest.fixture
def numpy_backend():
    previous = ember.get_backend()
    ember.set_backend("numpy")
    try:
        yield "numpy"
    finally:
        ember.set_backend(previous)


def _model() -> ember.Model:
    model = ember.Sequential([layers.Input((3,), dtype="float64"), layers.Dense(4, activation="tanh", dtype="float64"),
                              layers.Dense(1, dtype="float64")], name="net")
    model.build(seed=0)
    return model


def _inputs() -> list:
    rng = np.random.default_rng(1)
    return [rng.normal(size=(8, 3)) for _ in range(2)]


def _loss(model, x):
    return ops.mean(ops.square(model(x)))


def _gradients(model, x) -> list:
    with ember.GradientTape() as tape:
        loss = _loss(model, x)
    return _as_numpy(tape.gradient(loss, model.trainable_variables))


def _as_numpy(grads: list) -> list:
    return [None if g is None else ops.to_numpy(g) for g in grads]


def _assert_same(got: list, expected: list) -> None:
    assert [g is None for g in got] == [False] * len(expected), "a gradient is None"
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_a_rule_sees_its_own_threads_needed_arguments_while_another_backward_pass_runs(numpy_backend, monkeypatch):
    # B's backward pass stops inside its first matmul rule (the output layer: both arguments
    # need a cotangent) until A's backward pass is inside its second (the first layer: the
    # inputs need none); then B's rule runs. It must see B's flags, not A's.
    model = _model()
    inputs = _inputs()
    serial = [_gradients(model, x) for x in inputs]
    matmul = rules.RULES["matmul"]
    calls: dict = {}
    b_waits, a_waits, b_done = threading.Event(), threading.Event(), threading.Event()

    def interleaved_matmul(*args, **kwargs):
        name = threading.current_thread().name
        calls[name] = calls.get(name, 0) + 1
        if name == "thread-b" and calls[name] == 1:
            b_waits.set()
            assert a_waits.wait(WAIT_S), "thread A never reached its first-layer matmul rule"
        elif name == "thread-a" and calls[name] == 2:
            a_waits.set()
            assert b_done.wait(WAIT_S), "thread B never finished its gradient"
        return matmul(*args, **kwargs)

    monkeypatch.setitem(rules.RULES, "matmul", interleaved_matmul)
    got: dict = {}
    errors: list = []

    def run(name, x, before=None, after=None):
        try:
            if before is not None:
                assert before.wait(WAIT_S), "the other thread never reached its rule"
            got[name] = _gradients(model, x)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            if after is not None:
                after.set()

    b = threading.Thread(target=run, args=("thread-b", inputs[1]), kwargs={"after": b_done}, name="thread-b")
    a = threading.Thread(target=run, args=("thread-a", inputs[0]), kwargs={"before": b_waits}, name="thread-a")
    b.start()
    a.start()
    for thread in (a, b):
        thread.join(WAIT_S)
        assert not thread.is_alive(), "a worker thread hung"
    assert errors == []
    _assert_same(got["thread-a"], serial[0])
    _assert_same(got["thread-b"], serial[1])
    assert calls == {"thread-a": 2, "thread-b": 2}  # one matmul rule per layer in each thread
    assert rules.needs(0) and rules.needs(5)  # outside any rule call, in this thread: every argument


def test_a_tape_keeps_recording_while_another_thread_starts_and_stops_a_tape(backend):
    model = _model()
    inputs = _inputs()
    serial = [_gradients(model, x) for x in inputs]
    a_records, b_stopped = threading.Event(), threading.Event()
    got: dict = {}
    errors: list = []

    def thread_a():
        try:
            with ember.GradientTape() as tape:
                a_records.set()
                assert b_stopped.wait(WAIT_S), "thread B never stopped its tape"
                loss = _loss(model, inputs[0])
            got["a"] = _as_numpy(tape.gradient(loss, model.trainable_variables))
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    def thread_b():
        try:
            assert a_records.wait(WAIT_S), "thread A never started its tape"
            got["b"] = _gradients(model, inputs[1])
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            b_stopped.set()

    threads = [threading.Thread(target=thread_a, name="thread-a"), threading.Thread(target=thread_b, name="thread-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive(), "a worker thread hung"
    assert errors == []
    _assert_same(got["a"], serial[0])
    _assert_same(got["b"], serial[1])
