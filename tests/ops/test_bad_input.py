"""Bad input: invalid axes and arrays of another framework give clear errors."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import ember
from ember import backends, ops
from tests.helpers import native

X = np.arange(6, dtype=np.float32).reshape(2, 3)

# op -> call with an out-of-range axis value ``a`` on the rank-2 array ``x``
AXIS_CALLS = {
    "sum": lambda x, a: ops.sum(x, axis=a),
    "sum(tuple)": lambda x, a: ops.sum(x, axis=(0, a)),
    "mean": lambda x, a: ops.mean(x, axis=a),
    "prod": lambda x, a: ops.prod(x, axis=a),
    "max": lambda x, a: ops.max(x, axis=a),
    "min": lambda x, a: ops.min(x, axis=a),
    "argmax": lambda x, a: ops.argmax(x, axis=a),
    "argmin": lambda x, a: ops.argmin(x, axis=a),
    "var": lambda x, a: ops.var(x, axis=a),
    "std": lambda x, a: ops.std(x, axis=a),
    "logsumexp": lambda x, a: ops.logsumexp(x, axis=a),
    "all": lambda x, a: ops.all(x, axis=a),
    "any": lambda x, a: ops.any(x, axis=a),
    "cumsum": lambda x, a: ops.cumsum(x, axis=a),
    "cumprod": lambda x, a: ops.cumprod(x, axis=a),
    "count_nonzero": lambda x, a: ops.count_nonzero(x, axis=a),
    "expand_dims": lambda x, a: ops.expand_dims(x, a),
    "squeeze": lambda x, a: ops.squeeze(x, axis=a),
    "concatenate": lambda x, a: ops.concatenate([x, x], axis=a),
    "stack": lambda x, a: ops.stack([x, x], axis=a),
    "split": lambda x, a: ops.split(x, 1, axis=a),
    "repeat": lambda x, a: ops.repeat(x, 2, axis=a),
    "flip": lambda x, a: ops.flip(x, axis=a),
    "moveaxis": lambda x, a: ops.moveaxis(x, a, 0),
    "swapaxes": lambda x, a: ops.swapaxes(x, 0, a),
    "take": lambda x, a: ops.take(x, np.array([0]), axis=a),
    "take_along_axis": lambda x, a: ops.take_along_axis(x, np.zeros((2, 3), np.int32), axis=a),
    "sort": lambda x, a: ops.sort(x, axis=a),
    "argsort": lambda x, a: ops.argsort(x, axis=a),
    "nn.softmax": lambda x, a: ops.nn.softmax(x, axis=a),
    "nn.log_softmax": lambda x, a: ops.nn.log_softmax(x, axis=a),
    "nn.moments": lambda x, a: ops.nn.moments(x, [a]),
    "stats.mean": lambda x, a: ops.stats.mean(x, axis=a),
    "stats.var": lambda x, a: ops.stats.var(x, axis=a),
    "stats.median": lambda x, a: ops.stats.median(x, axis=a),
    "stats.percentile": lambda x, a: ops.stats.percentile(x, 50.0, axis=a),
    "stats.quantile": lambda x, a: ops.stats.quantile(x, 0.5, axis=a),
    "linalg.norm": lambda x, a: ops.linalg.norm(x, axis=a),
}


@pytest.mark.parametrize("bad_axis", [5, -7])
@pytest.mark.parametrize("label", list(AXIS_CALLS))
def test_invalid_axis_is_value_error_naming_axis(backend, label, bad_axis):
    with pytest.raises(ValueError) as info:
        AXIS_CALLS[label](native(X), bad_axis)
    message = str(info.value)
    assert re.search(rf"(?<![\d-]){bad_axis}(?!\d)", message), f"{label}: axis {bad_axis} not named in {message!r}"
    assert "axis" in message.lower() or "source" in message.lower(), f"{label}: argument not named in {message!r}"


@pytest.mark.parametrize("name", ["sum", "mean", "max", "all"])
def test_repeated_axis_is_value_error(backend, name):
    with pytest.raises(ValueError):
        getattr(ops, name)(native(X), axis=(1, -1))


# ------------------------------------------------------------ foreign arrays


def _foreign(owner, values):
    if owner == "torch":
        return importlib.import_module("torch").tensor(values)
    mx = importlib.import_module("mlx.core")
    return mx.array(values)


FOREIGN_CALLS = {
    "convert_to_tensor": lambda f, n: ops.convert_to_tensor(f),
    "add(foreign, native)": lambda f, n: ops.add(f, n),
    "add(native, foreign)": lambda f, n: ops.add(n, f),
    "multiply(foreign, scalar)": lambda f, n: ops.multiply(f, 2.0),
    "sum": lambda f, n: ops.sum(f),
    "exp": lambda f, n: ops.exp(f),
    "reshape": lambda f, n: ops.reshape(f, (3, 2)),
    "matmul": lambda f, n: ops.matmul(n, f),
    "concatenate": lambda f, n: ops.concatenate([n, f]),
    "where": lambda f, n: ops.where(n > 2, f, n),
    "getitem": lambda f, n: ops.getitem(f, 0),
    "cast": lambda f, n: ops.cast(f, "float16"),
    "nn.relu": lambda f, n: ops.nn.relu(f),
    "linalg.inv": lambda f, n: ops.linalg.inv(f),
    "stats.median": lambda f, n: ops.stats.median(f),
    "random.shuffle": lambda f, n: ops.random.shuffle(f, seed=0),
}

PAIRS = [(active, owner) for active in backends.BACKENDS for owner in ("torch", "mlx") if owner != active]


@pytest.mark.parametrize("label", list(FOREIGN_CALLS))
@pytest.mark.parametrize(("active", "owner"), PAIRS, ids=[f"{o}-array-on-{a}" for a, o in PAIRS])
def test_foreign_array_is_type_error_naming_both_backends(active, owner, label):
    missing = [name for name in (active, owner) if not backends.is_installed(name)]
    if missing:
        pytest.skip(f"{missing} not installed (pip install \"ember[{missing[0]}]\")")
    square = [[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]]
    values = square if label in ("linalg.inv", "matmul") else X.tolist()
    foreign = _foreign(owner, values)
    with ember.using_backend(active):
        mine = native(np.asarray(values, dtype=np.float32))
        with pytest.raises(TypeError) as info:
            FOREIGN_CALLS[label](foreign, mine)
    message = str(info.value)
    assert active in message and owner in message, message
    assert "convert" in message or "to_backend" in message, message


TENSOR_PAIRS = [(active, owner) for active in backends.BACKENDS for owner in backends.BACKENDS if owner != active]


@pytest.mark.parametrize("label", ["add(foreign, native)", "add(native, foreign)", "sum", "reshape", "nn.relu",
                                   "concatenate", "convert_to_tensor"])
@pytest.mark.parametrize(("active", "owner"), TENSOR_PAIRS, ids=[f"{o}-tensor-on-{a}" for a, o in TENSOR_PAIRS])
def test_tensor_of_other_backend_is_type_error(active, owner, label):
    missing = [name for name in (active, owner) if not backends.is_installed(name)]
    if missing:
        pytest.skip(f"{missing} not installed (pip install \"ember[{missing[0]}]\")")
    with ember.using_backend(owner):
        foreign = ember.tensor(X)
    with ember.using_backend(active):
        mine = native(X)
        with pytest.raises(TypeError) as info:
            FOREIGN_CALLS[label](foreign, mine)
    message = str(info.value)
    assert active in message and owner in message, message
    assert "convert" in message or "to_backend" in message, message


def test_tensor_of_active_backend_is_accepted(backend):
    t = ember.tensor(X)
    out = ops.add(t, native(X))
    assert ops.is_array(out)
    np.testing.assert_array_equal(ops.to_numpy(out), 2 * X)


_OUT_OF_BOUNDS = {
    "gather": lambda i: ops.gather(ops.arange(4), i([[1], [9]])),
    "scatter": lambda i: ops.scatter(i([[7]]), ops.ones((1,)), (4,)),
    "scatter_update": lambda i: ops.scatter_update(ops.zeros((4,)), i([[-5]]), ops.ones((1,))),
    "scatter_add": lambda i: ops.scatter_add(ops.zeros((2, 3)), i([[1, 3]]), ops.ones((1,))),
    "take": lambda i: ops.take(ops.arange(4), i([0, 5])),
    "take_along_axis": lambda i: ops.take_along_axis(ops.arange(4), i([5]), 0),
    "getitem": lambda i: ops.getitem(ops.zeros((3, 4)), (slice(None), i([1, 4]))),
}


@pytest.mark.parametrize("name", sorted(_OUT_OF_BOUNDS))
@pytest.mark.parametrize("where", ["host", "native"])
def test_out_of_bounds_indices_are_index_errors(backend, name, where, request):
    """Every backend refuses an index outside [-size, size) (MLX itself would read or write
    out-of-bounds memory), whether the indices are host data or the backend's own array.

    Torch reads its own arrays' indices only on the CPU (on CUDA that would wait for the device in
    every step; torch's device-side assert reports them there), so "native" runs torch on the CPU;
    host indices are checked on every device (tests/test_cuda.py)."""
    ember.set_backend(backend)
    if where == "native":
        request.getfixturevalue("torch_on_cpu")

    def indices(values):
        values = np.asarray(values, dtype=np.int32)
        return native(values) if where == "native" else values

    with pytest.raises(IndexError, match=r"out of bounds for axis \d with size \d"):
        _OUT_OF_BOUNDS[name](indices)
