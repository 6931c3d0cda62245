"""``ember.recorded``: what the op-recording tapes (NumPy, MLX) share, below the backends."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.autodiff import recording
from ember.autodiff.engines import engine_module
from ember.recorded import calls
from ember.recorded.op_namespace import OPS, OpNamespace
from tests.tolerances import FLOAT32


def test_autodiff_recording_shares_the_state_below_it():
    # One list of recording engines, whichever module a reader imports it from.
    assert recording._local is calls._local
    assert recording.is_recording is calls.is_recording
    assert recording.recording_engines is calls.recording_engines


def test_unrecorded_block_records_nothing_and_restores_the_depth_on_error(backend):
    x = ops.convert_to_tensor(np.array([1.0, 2.0], dtype="float32"))
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with pytest.raises(RuntimeError, match="inside"), calls.unrecorded():
            ops.exp(x)
            raise RuntimeError("inside the block")
        assert calls._local.state.depth == 0
        y = ops.sum(ops.exp(x))
    expected = np.exp([1.0, 2.0])
    np.testing.assert_allclose(ops.to_numpy(tape.gradient(y, x)), expected, **FLOAT32)
    if backend != "torch":  # torch's autograd records; the others keep only the calls offered outside the block
        assert [node.op for node in tape.graph] == ["exp", "sum"]


def test_the_tape_starts_engines_that_record_ops(backend):
    engine_type = engine_module(backend).TapeEngine
    assert engine_type.records_ops is (backend != "torch")
    with ember.GradientTape() as tape:
        listed = tape._engine in calls.recording_engines()
    assert listed is engine_type.records_ops
    assert tape._engine not in calls.recording_engines()


def test_ops_installs_itself_in_the_hook():
    assert OPS.module() is ops


def test_an_empty_hook_says_ember_ops_is_not_imported():
    with pytest.raises(RuntimeError, match="ember.ops is not imported"):
        OpNamespace().module()


def test_custom_gradient_is_one_recorded_op_on_every_backend(backend):
    """``GradientTape(record_graph=True)`` records an ``ember.custom_gradient`` call as one op and the ops
    using its output, on torch too (its autograd node was invisible to the recorded graph)."""
    @ember.custom_gradient
    def spike(v):
        return ops.cast(ops.greater(v, 0.0), "float32"), lambda g: ops.multiply(g, 0.5)

    x = ops.convert_to_tensor([0.5, 1.5])
    with ember.GradientTape(record_graph=True) as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(spike(ops.subtract(x, 1.0)), 2.0))
    assert [node.op for node in tape.graph] == ["subtract", "custom_gradient", "multiply", "sum"]
    assert ops.to_numpy(tape.gradient(y, x)).tolist() == [1.0, 1.0]  # 2 * 0.5: the custom rule
