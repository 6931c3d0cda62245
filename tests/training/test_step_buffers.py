"""StepBuffers: the spare arrays of fit's atomic steps, refilled only where the step does not overwrite them."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember import ops
from ember.training.step_buffers import StepBuffers


@pytest.mark.parametrize("name", ["numpy", "torch"])  # the backends whose fit steps update arrays in place
def test_spare_arrays_are_refilled_except_the_overwritten_ones(name):
    ember.set_backend(name)  # the autouse fixture of tests/conftest.py restores the default
    training = importlib.import_module(f"ember.backends.{name}.training")
    buffers = StepBuffers(training._copy if name == "numpy" else training._clone_leaf, training._refill)
    params, opt = {"w": ops.zeros((2,)), "b": ops.zeros((1,))}, {"m": ops.zeros((2,))}
    first, first_opt = buffers.writable(params, opt)
    assert all(first[k] is not params[k] for k in params) and first_opt["m"] is not opt["m"]
    for array, value in ((first["w"], 1.0), (first["b"], 2.0), (first_opt["m"], 3.0)):
        array[...] = value
    buffers.commit(params, opt, first, first_opt)
    second, second_opt = buffers.writable(first, first_opt, frozenset([id(first["w"]), id(first_opt["m"])]))
    assert second["w"] is params["w"] and second["b"] is params["b"] and second_opt["m"] is opt["m"]
    np.testing.assert_array_equal(ops.to_numpy(second["b"]), [2.0])        # refilled
    np.testing.assert_array_equal(ops.to_numpy(second["w"]), [0.0, 0.0])   # stale: the step writes it whole
    np.testing.assert_array_equal(ops.to_numpy(second_opt["m"]), [0.0, 0.0])
    np.testing.assert_array_equal(ops.to_numpy(first["w"]), [1.0, 1.0])    # the given state is untouched
