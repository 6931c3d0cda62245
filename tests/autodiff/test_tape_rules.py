"""TensorFlow's tape rules on every backend: ``watch_accessed_variables`` (through the variable
hook ``ember.autodiff.record_variable_read``), non-scalar targets summed, and a target computed
outside the tape refused with the same error everywhere.

References are derivatives written out by hand (NumPy float64)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import autodiff, ops
from ember.backends._common import UntrackedTargetError


class FakeVariable:
    """The smallest object following the variable protocol (what ``ember.Variable`` implements)."""

    __ember_variable__ = True

    def __init__(self, value, trainable=True):
        self._value = ops.convert_to_tensor(np.asarray(value, dtype=np.float32))
        self.trainable = trainable

    @property
    def value(self):
        return self._value

    def read(self):
        return autodiff.record_variable_read(self, self._value)


def test_accessed_variables_are_watched_by_default(backend):
    w, b = FakeVariable([1.0, -2.0]), FakeVariable([0.5, 0.5])
    x = ops.convert_to_tensor(np.array([3.0, 4.0], np.float32))
    with ember.GradientTape() as tape:
        y = ops.sum(ops.square(ops.add(ops.multiply(w.read(), x), b.read())))  # forgot tape.watch
    gw, gb = tape.gradient(y, [w, b])
    inner = np.array([1.0, -2.0]) * np.array([3.0, 4.0]) + 0.5
    # exact: small integers and halves (inner = [3.5, -7.5]), representable in float32
    np.testing.assert_array_equal(ops.to_numpy(gw), 2 * inner * np.array([3.0, 4.0]))
    np.testing.assert_array_equal(ops.to_numpy(gb), 2 * inner)
    assert tape.watched_variables() == (w, b)


def test_flag_false_watches_only_what_watch_was_given(backend):
    w, b = FakeVariable([1.0, -2.0]), FakeVariable([0.5, 0.5])
    frozen = FakeVariable([2.0, 2.0], trainable=False)
    with ember.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = ops.sum(ops.multiply(ops.multiply(w.read(), b.read()), frozen.read()))
    gw, gb, gf = tape.gradient(y, [w, b, frozen])
    np.testing.assert_array_equal(ops.to_numpy(gw), [1.0, 1.0])  # exact: 0.5 * 2
    assert gb is None and gf is None


def test_non_trainable_variables_are_not_watched_automatically(backend):
    frozen = FakeVariable([2.0, 3.0], trainable=False)
    with ember.GradientTape() as tape:
        y = ops.sum(ops.square(frozen.read()))
    assert tape.gradient(y, frozen) is None
    assert tape.watched_variables() == ()


def test_reads_inside_stop_recording_are_not_watched(backend):
    w = FakeVariable([1.0])
    with ember.GradientTape() as tape:
        with tape.stop_recording():
            w.read()
    assert tape.watched_variables() == ()


def test_torch_parameters_follow_the_flag(torch_backend):
    import torch

    param = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    x = torch.tensor([3.0, 5.0])
    with ember.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(param, x))
    gp, gx = tape.gradient(y, [param, x])
    assert gp is None  # not watched: not differentiated although it requires grad
    np.testing.assert_allclose(gx.numpy(), [1.0, 2.0])
    with ember.GradientTape() as tape:  # default True: a Parameter is one of torch's variables
        y = ops.sum(ops.multiply(param, x))
    np.testing.assert_allclose(tape.gradient(y, param).numpy(), [3.0, 5.0])


def test_flag_false_still_differentiates_intermediates_of_watched_values(torch_backend):
    import torch

    param = torch.nn.Parameter(torch.tensor([2.0]))
    x = torch.tensor([3.0])
    with ember.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        h = ops.multiply(x, x)
        unwatched = ops.multiply(param, 2.0)
        y = ops.sum(ops.add(ops.multiply(h, 2.0), unwatched))
    gh, gu = tape.gradient(y, [h, unwatched])
    np.testing.assert_allclose(gh.numpy(), [2.0])
    assert gu is None


def test_non_scalar_targets_are_summed_on_every_backend(backend):
    x = ops.convert_to_tensor(np.array([1.0, 2.0, 3.0], np.float32))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.multiply(x, x)  # shape (3,)
    np.testing.assert_allclose(ops.to_numpy(tape.gradient(y, x)), [2.0, 4.0, 6.0])
    value, grad = ember.value_and_grad(lambda x: ops.multiply(x, x))(x)
    np.testing.assert_allclose(ops.to_numpy(value), [1.0, 4.0, 9.0])  # the value as fn returned it
    np.testing.assert_allclose(ops.to_numpy(grad), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_target_computed_outside_the_tape_raises_the_same_error(backend, when, torch_on_cpu):
    # torch checks this on the CPU only (TorchTape._made_here: on CUDA, create_graph makes nodes in
    # device threads numbered apart), hence torch_on_cpu.
    x = ops.convert_to_tensor(np.array([1.0, 2.0], np.float32))
    outside = None
    if when == "before":
        with ember.GradientTape() as warmup:  # x takes part in an earlier tape (requires grad on torch)
            warmup.watch(x)
        outside = ops.sum(ops.multiply(x, 3.0))
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        inside = ops.sum(ops.multiply(x, 3.0))
    if when == "after":
        outside = ops.sum(ops.multiply(x, 3.0))
    with pytest.raises(UntrackedTargetError) as info:
        tape.gradient(outside, x)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith("GradientTape.gradient: target 0 was not computed inside this tape's `with` block")
    assert "ember.ops" in message and message.endswith(f"(backend: {backend})")
    np.testing.assert_allclose(ops.to_numpy(tape.gradient(inside, x)), [3.0, 3.0])


def test_sources_are_told_apart_by_tensor_not_by_buffer(backend):
    """Two Tensors converted from one NumPy array are two sources (issue: NumPy followed the buffer)."""
    data = np.array([1.0, 2.0], np.float32)
    a, b = ember.convert_to_tensor(data), ember.convert_to_tensor(data)
    with ember.GradientTape() as tape:
        tape.watch([a, b])
        y = ops.sum(ops.multiply(a, 3.0))
    ga, gb = tape.gradient(y, [a, b], unconnected_gradients="zero")
    np.testing.assert_allclose(ops.to_numpy(ga), [3.0, 3.0])
    np.testing.assert_allclose(ops.to_numpy(gb), [0.0, 0.0])
    if backend == "numpy":  # still zero-copy: the watched Tensor shares the array's memory
        assert np.shares_memory(a._native, data)


def test_a_tensor_watched_by_nested_tapes_keeps_one_identity(backend):
    x = ember.convert_to_tensor(np.array([1.0, -2.0], np.float32))
    with ember.GradientTape() as outer:
        outer.watch(x)
        with ember.GradientTape() as inner:
            inner.watch(x)
            inner.watch(x)  # watching twice changes nothing
            y = ops.sum(ops.multiply(ops.square(x), x))
        g = inner.gradient(y, x)
        total = ops.sum(g)
    np.testing.assert_allclose(ops.to_numpy(g), [3.0, 12.0])
    np.testing.assert_allclose(ops.to_numpy(outer.gradient(total, x)), [6.0, -12.0])
