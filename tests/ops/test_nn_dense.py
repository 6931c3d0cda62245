"""``ops.nn.dense``: ``inputs @ kernel + bias`` in one op (torch's and MLX's ``addmm``; a composite on NumPy).

References: NumPy in float64 (values), torch autograd in float64 (gradients of every argument).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.ops.extra import composites
from tests.helpers import float64_device
from tests.tolerances import FLOAT32, FLOAT64

torch = pytest.importorskip("torch")  # the gradient reference, not the code under test

SHAPES = [(5, 4), (2, 3, 4), (2, 1, 3, 4), (0, 4), (2, 3, 0)]  # rows, sequences, images of rows, an empty batch,
# no features (torch cannot fold those into rows: its general path)


# The operands are unit-scale normals, not 0.1-scale initialised weights: near zero a 4-input dense is off by
# (4 + 1) u sum|terms| = 5 u * 3.4 = 1e-6, its gradients (sums over <= 6 rows) by 6 u * 4 = 1.4e-6; FLOAT32's
# relative part, an absolute part 10x those figures' u-scale: 1e-5.
UNIT_SCALE = {**FLOAT32, "atol": 1e-5}


def _operands(input_shape, units=3, seed=0, use_bias=True):
    rng = np.random.default_rng(seed)
    features = input_shape[-1]
    return (rng.normal(size=input_shape), rng.normal(size=(features, units)),
            rng.normal(size=(units,)) if use_bias else None)


def _native(value, dtype=np.float32):
    return None if value is None else ops.convert_to_tensor(np.asarray(value, dtype))


def _reference(x, kernel, bias):
    y = np.asarray(x, np.float64) @ np.asarray(kernel, np.float64)
    return y if bias is None else y + np.asarray(bias, np.float64)


@pytest.mark.parametrize("input_shape", SHAPES, ids=str)
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_numpy_float64(backend, input_shape, use_bias):
    x, kernel, bias = _operands(input_shape, use_bias=use_bias)
    got = ops.nn.dense(_native(x), _native(kernel), _native(bias))
    assert ops.dtype(got) == "float32"
    assert ops.shape(got) == input_shape[:-1] + (3,)
    np.testing.assert_allclose(ops.to_numpy(got), _reference(x, kernel, bias), **UNIT_SCALE)


def test_float64(backend):
    x, kernel, bias = _operands((6, 5), seed=1)
    with float64_device(backend):
        got = ops.nn.dense(_native(x, np.float64), _native(kernel, np.float64), _native(bias, np.float64))
        assert ops.dtype(got) == "float64"
        np.testing.assert_allclose(ops.to_numpy(got), _reference(x, kernel, bias), **FLOAT64)


def test_equals_matmul_then_add_for_other_dtypes(backend):
    """Mixed and integer operands follow ``matmul`` and ``add``'s dtype rules (the general path)."""
    x = ops.convert_to_tensor(np.array([[1, 2], [3, 4]], np.int32))
    kernel = ops.convert_to_tensor(np.array([[1.0, 0.5], [2.0, -1.0]], np.float32))
    bias = ops.convert_to_tensor(np.array([1, -1], np.int32))
    got = ops.nn.dense(x, kernel, bias)
    expected = ops.add(ops.matmul(x, kernel), bias)
    assert ops.dtype(got) == ops.dtype(expected)
    np.testing.assert_array_equal(ops.to_numpy(got), ops.to_numpy(expected))
    lists = ops.nn.dense([[1.0, 2.0]], [[1.0], [1.0]], [0.5])
    assert ops.to_numpy(lists).tolist() == [[3.5]]
    vector = ops.nn.dense(_native([1.0, 2.0]), _native([[1.0, 0.0], [0.0, 1.0]]), _native([1.0, 1.0]))
    assert ops.to_numpy(vector).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("input_shape", [(5, 4), (2, 3, 4)], ids=str)
def test_gradients_match_torch_autograd(backend, input_shape):
    x, kernel, bias = _operands(input_shape, seed=2)
    weights = np.random.default_rng(3).normal(size=input_shape[:-1] + (3,))
    arrays = [_native(x), _native(kernel), _native(bias)]
    with ember.GradientTape() as tape:
        tape.watch(arrays)
        loss = ops.sum(ops.multiply(ops.nn.dense(*arrays), _native(weights)))
    got = tape.gradient(loss, arrays)
    references = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, kernel, bias)]
    (torch.nn.functional.linear(references[0], references[1].T, references[2]) * torch.tensor(weights)).sum().backward()
    for name, g, r in zip(["inputs", "kernel", "bias"], got, references):
        np.testing.assert_allclose(ops.to_numpy(g), r.grad.numpy(), **UNIT_SCALE, err_msg=name)


@pytest.mark.parametrize(("x_shape", "kernel_shape", "bias_shape", "message"), [
    ((5, 4), (3, 2), None, r"the last axis of inputs \(4\) must equal the kernel's first \(3\)"),
    ((5, 4), (4, 2), (3,), r"bias must have shape \(units,\) = \(2,\), received \(3,\)"),
    ((5, 4), (4, 2), (1, 2), r"bias must have shape \(units,\) = \(2,\), received \(1, 2\)"),
    ((5, 4), (4,), None, r"kernel must have shape \(features, units\), received \(4,\)"),
    ((), (4, 2), None, "inputs must have at least one axis"),
])
def test_bad_shapes_name_the_argument(backend, x_shape, kernel_shape, bias_shape, message):
    operands = [ops.ones(x_shape), ops.ones(kernel_shape), None if bias_shape is None else ops.ones(bias_shape)]
    with pytest.raises(ValueError, match="nn.dense: " + message):
        ops.nn.dense(*operands)


# torch and MLX run one fused kernel; NumPy the composite (a tape records its two ops).
NATIVE = {"torch", "mlx"}


def test_native_or_composite(backend):
    assert composites.is_composite(ops.nn.dense) != (backend in NATIVE)
    if backend == "torch":
        x, kernel, bias = (_native(v) for v in _operands((5, 4)))
        kernel.requires_grad_(True)
        assert type(ops.nn.dense(x, kernel, bias).grad_fn).__name__ == "AddmmBackward0"
        return
    if backend == "mlx":  # one node, replayed by MLX's own vjp
        kernel = _native(_operands((5, 4))[1])
        with ember.GradientTape() as tape:
            tape.watch(kernel)
            ops.nn.dense(ops.ones((5, 4)), kernel, ops.ones((3,)))
        assert [node.op for node in tape.graph] == ["nn.dense"]
        return
    kernel = _native(_operands((5, 4))[1])
    with ember.GradientTape() as tape:
        tape.watch(kernel)
        ops.nn.dense(ops.ones((5, 4)), kernel, ops.ones((3,)))
    assert [node.op for node in tape.graph] == ["matmul", "add"]


def test_dense_layer_runs_the_op(backend):
    """``layers.Dense`` projects through ``ops.nn.dense``: same numbers as the NumPy reference."""
    layer = ember.layers.Dense(3, activation="tanh")
    x = np.random.default_rng(4).normal(size=(2, 7, 4)).astype(np.float32)
    state = layer.build((None, 7, 4), seed=0)
    got, _ = layer.apply(state, _native(x))
    params = {k: ops.to_numpy(v) for k, v in state["params"].items()}
    expected = np.tanh(_reference(x, params["kernel"], params["bias"]))
    np.testing.assert_allclose(ops.to_numpy(got), expected, **FLOAT32)
