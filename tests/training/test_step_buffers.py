"""StepBuffers: the spare arrays of fit's atomic steps, refilled only where the step does not overwrite them."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember import ops
from ember.backends._step_buffers import StepBuffers


@pytest.mark.parametrize("name", ["numpy", "torch"])  # the backends whose fit steps update arrays in place
def test_spare_arrays_are_refilled_except_the_overwritten_ones(name):
    ember.set_backend(name)  # the autouse fixture of tests/conftest.py restores the default
    training = importlib.import_module(f"ember.backends.{name}.training")
    buffers = StepBuffers(training._copy if name == "numpy" else training._clone_leaf, training._fits,
                          training._copy_into)
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


def test_arrays_handed_out_by_the_last_step_are_reused_without_a_check():
    checked = []

    def fits(spare, leaf):
        checked.append(leaf)
        return isinstance(spare, np.ndarray) and isinstance(leaf, np.ndarray) and spare.shape == leaf.shape \
            and spare.dtype == leaf.dtype and spare is not leaf

    buffers = StepBuffers(np.copy, fits, lambda targets, sources: [np.copyto(t, s) for t, s in zip(targets, sources)])
    state = ({"w": np.zeros(2), "b": np.zeros(1)}, {"m": np.zeros(2), "iterations": 0})
    for step in range(1, 4):
        checked.clear()
        params, opt = buffers.writable(*state)
        params["w"] += 1.0
        opt = {"m": opt["m"], "iterations": step}  # a new leaf the step made itself (never handed out)
        if step == 3:
            params = {"w": params["w"], "b": np.full(3, 5.0)}  # a leaf of a new shape, made by the step
        buffers.commit(*state, params, opt)
        # steps 1 and 2 start from arrays not handed out by a matched step: every leaf is checked;
        # step 3 checks only the leaf the previous step made itself (its int counter)
        assert len(checked) == {1: 0, 2: 4, 3: 1}[step], (step, checked)
        state = (params, opt)
    params, opt = buffers.writable(*state)  # the new-shape leaf gets a fresh array, not the old spare
    assert params["b"].shape == (3,) and params["b"] is not state[0]["b"] and params["b"].tolist() == [5.0] * 3
    assert params["w"].tolist() == [3.0, 3.0] and opt["iterations"] == 3


def test_scratch_arrays_are_kept_per_key_until_clear():
    buffers = StepBuffers(np.copy, lambda spare, leaf: False, lambda targets, sources: None)
    made = []

    def make():
        made.append(1)
        return [np.empty(3)]

    first = buffers.scratch([(3,)], make)
    assert buffers.scratch([(3,)], make) is first and len(made) == 1
    assert buffers.scratch([(4,)], make) is not first and len(made) == 2  # new shapes: new arrays
    buffers.clear()
    buffers.scratch([(4,)], make)
    assert len(made) == 3
