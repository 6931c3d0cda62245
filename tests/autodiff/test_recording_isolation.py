"""Recording changes nothing for code outside the tape (issue #33).

While a :class:`~ember.GradientTape` records, the torch and MLX backends re-bind some of
``torch.Tensor``'s and ``mlx.core.array``'s operators (so ``h += w`` on a watched value is
recorded). Those hooks must act only for the recording thread and on the values its tape
tracks: another thread computing at the same time, and untracked arrays in the recording
thread itself, keep the library's own behaviour. The property that shows it is aliasing:
an in-place ``x += 1`` leaves ``x`` the same object as before (``x is alias``) with the new
values, where an out-of-place update would rebind ``x`` to a new array.

References are written out here: the in-place semantics of each library and the
derivative of ``sum(2 w + w) = 3 sum(w)``, which is 3 for every element.
"""

from __future__ import annotations

import threading

import numpy as np

import ember
from ember import ops

WAIT_S = 30  # generous bound for the other thread to reach a point; a failure, not a hang, when it passes


def _graph_member(backend: str, values) -> object:
    """A native float32 array that, on torch, requires grad and has an autograd history (a non-leaf)."""
    native = ops.convert_to_tensor(np.asarray(values, dtype="float32"))
    if backend == "torch":
        native.requires_grad_(True)
        return native * 1.0  # a non-leaf: torch itself allows an in-place update of it
    return native


def _update_in_place(native) -> tuple[bool, list]:
    """``native += 1`` in the caller's scope: whether the name still names the same object, and the values."""
    alias = native
    native += 1.0
    return native is alias, ops.to_numpy(ops.stop_gradient(alias)).tolist()


def test_another_thread_keeps_in_place_operators_while_a_tape_records(backend):
    recording, finished = threading.Event(), threading.Event()
    seen: dict = {}

    def other_thread() -> None:
        try:
            assert recording.wait(WAIT_S), "the main thread's tape never started recording"
            seen["in_place"] = _update_in_place(_graph_member(backend, [1.0, 2.0, 3.0]))
            plain = ops.add(ops.convert_to_tensor(np.ones(2, dtype="float32")), 1.0)
            seen["plain_type"] = type(plain)
        except BaseException as error:  # reported by the main thread
            seen["error"] = error
        finally:
            finished.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    w = ops.convert_to_tensor(np.array([1.0, -2.0], dtype="float32"))
    with ember.GradientTape() as tape:
        tape.watch(w)
        h = ops.multiply(w, 2.0)
        recording.set()
        assert finished.wait(WAIT_S), "the other thread did not finish"
        h += w
        loss = ops.sum(h)
    worker.join(WAIT_S)
    assert "error" not in seen, seen.get("error")
    # torch's and MLX's own in-place update: the same object, new values.
    assert seen["in_place"] == (True, [2.0, 3.0, 4.0])
    native_type = type(ops.convert_to_tensor(np.ones(2, dtype="float32")))
    assert seen["plain_type"] is native_type  # NumPy: a plain ndarray, not the tape's traced array
    np.testing.assert_array_equal(ops.to_numpy(tape.gradient(loss, w)), [3.0, 3.0])


def test_untracked_values_keep_in_place_operators_inside_the_recording_thread(backend):
    w = ops.convert_to_tensor(np.array([0.5, 1.5], dtype="float32"))
    scratch = ops.convert_to_tensor(np.zeros(2, dtype="float32"))  # nothing the tape tracks
    with ember.GradientTape() as tape:
        tape.watch(w)
        same, values = _update_in_place(scratch)
        h = ops.multiply(w, 2.0)
        tracked_alias = h
        h += w  # a tracked value: recorded out of place, so the gradient flows through both terms
        loss = ops.sum(h)
    assert (same, values) == (True, [1.0, 1.0])
    np.testing.assert_array_equal(ops.to_numpy(scratch), [1.0, 1.0])
    np.testing.assert_array_equal(ops.to_numpy(ops.stop_gradient(tracked_alias)), [1.0, 3.0])  # not updated
    np.testing.assert_array_equal(ops.to_numpy(tape.gradient(loss, w)), [3.0, 3.0])


def test_a_recording_tape_gets_exact_gradients_while_another_thread_computes(backend):
    """The other thread runs ``ember.ops`` and native operators in a loop for the tape's whole life."""
    stop = threading.Event()
    errors: list = []

    def busy() -> None:
        try:
            a = ops.convert_to_tensor(np.linspace(-1.0, 1.0, 8, dtype="float32"))
            while not stop.is_set():
                b = ops.tanh(a) * 3.0 + a
                a = ops.subtract(b, b) + a  # stays a: nothing accumulates
        except BaseException as error:
            errors.append(error)

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        x = np.linspace(-2.0, 2.0, 6, dtype="float32")
        w = ops.convert_to_tensor(x)
        with ember.GradientTape() as tape:
            tape.watch(w)
            loss = ops.sum(ops.tanh(w) * w)
        gradient = ops.to_numpy(tape.gradient(loss, w))
    finally:
        stop.set()
        worker.join(WAIT_S)
    assert not errors, errors
    xd = x.astype(np.float64)
    reference = np.tanh(xd) + xd * (1.0 - np.tanh(xd) ** 2)  # d/dx x tanh(x), in float64
    # float32 tanh and products: a few ulps of values of size <= 3 (ulp(3) ~ 2.4e-7); 1e-6 is well above
    # that and far below any recording error (a missed term changes the result by O(1)).
    np.testing.assert_allclose(gradient, reference, rtol=0, atol=1e-6)
