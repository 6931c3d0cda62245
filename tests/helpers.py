"""Shared helpers for the conformance tests: comparisons, strategies, small references.

References are always computed independently of the code under test: NumPy in
float64 on the same input values, or an equation written out in the test.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import weakref

import numpy as np
import optree
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ember import backends, dtypes, layers, ops
from tests.tolerances import FLOAT32

# Modest property-test budget (the whole suite must stay fast on 2 cores). The
# ``backend`` fixture only switches the active backend, so re-using it across
# hypothesis examples is safe.
PROPERTY = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Default float32 tolerances (DESIGN.md "Testing and benchmarks"): the derived FLOAT32 bound.
RTOL, ATOL = FLOAT32["rtol"], FLOAT32["atol"]
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


# --------------------------------------------------------------- optional references
# The suite collects on a core-only install (numpy, optree, h5py, pytest, hypothesis): a test file
# imports an optional reference (torch, SciPy, scikit-learn, Keras, Pillow) with ``optional_import``
# and marks the tests that use it with ``needs``; a file that is all about one optional package uses
# ``pytest.importorskip`` at module level instead (CONTRIBUTING.md, "Tests").


@functools.cache
def optional_import(name: str):
    """The module ``name`` (dotted names too), or None where it (or a package it needs) is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def needs(*names: str) -> pytest.MarkDecorator:
    """Mark: skip the test, naming what is missing, where one of the optional modules ``names`` is not
    installed (the backends' and the dev extras hold them all)."""
    missing = [name for name in names if optional_import(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}: not installed "
                              "(optional: pip install -e '.[all,dev]')")


def mark_params(values, mark: pytest.MarkDecorator, selected) -> list:
    """``values`` for ``pytest.mark.parametrize``, those in ``selected`` carrying ``mark`` (the cases
    whose reference is an optional package: ``mark_params(OPS, needs("scipy.special"), {"erf"})``)."""
    return [pytest.param(value, marks=mark) if value in selected else value for value in values]


def adam_step_atol(learning_rate, beta_1=0.9, beta_2=0.999, eps=EPS32, safety=2.0):
    """Absolute error bound of one Adam-family step ``p - lr * m_hat / (sqrt(v_hat) + epsilon)``
    computed in a dtype with machine epsilon ``eps``, against the exact value.

    The bias corrections ``1 - beta**t`` cancel: each loses ``log2(1 / (1 - beta))`` bits, so
    ``m_hat`` carries a relative error up to ``eps / (1 - beta_1)`` and ``sqrt(v_hat)`` up to
    ``eps / (2 (1 - beta_2))``; the step ``lr * m_hat / sqrt(v_hat)`` (of size up to ``lr``) inherits
    their sum, and ``safety`` covers the remaining few roundings of order ``eps``.
    """
    return safety * learning_rate * eps * (1.0 / (1.0 - beta_1) + 0.5 / (1.0 - beta_2) + 2.0)


def native(x, dtype=None):
    """``x`` (NumPy array, list or scalar) as a native array of the active backend."""
    if dtype is not None:
        x = np.asarray(x, dtype=dtypes.to_numpy_dtype(dtype))
    return ops.convert_to_tensor(x)


def f32(x):
    """``x`` as a float32 NumPy array (the values a test feeds to a backend)."""
    return np.asarray(x, dtype=np.float32)


def f64(x):
    """The float64 copy of ``x`` that references are computed on."""
    return np.asarray(x).astype(np.float64)


def _to_numpy(actual):
    got = ops.to_numpy(actual)
    assert isinstance(got, np.ndarray), f"ops.to_numpy returned {type(got).__name__}, not numpy.ndarray"
    return got


def assert_close(actual, expected, rtol=RTOL, atol=ATOL, dtype="float32", equal_nan=True, err_msg=""):
    """Check a native array against a NumPy reference: dtype, shape and values.

    Args:
        actual: native array of the active backend.
        expected: NumPy array (or scalar), usually computed in float64/complex128.
        rtol, atol: tolerances (float32 defaults).
        dtype: the Ember dtype name ``actual`` must have (None skips the check).
    """
    if dtype is not None:
        got_dtype = ops.dtype(actual)
        assert got_dtype == dtype, f"dtype: expected {dtype}, got {got_dtype}. {err_msg}"
    got = _to_numpy(actual)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape: expected {expected.shape}, got {got.shape}. {err_msg}"
    if np.iscomplexobj(got) or np.iscomplexobj(expected):
        got, expected = got.astype(np.complex128), expected.astype(np.complex128)
    else:
        got, expected = got.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, err_msg=err_msg)


def state_snapshot(model):
    """NumPy copies of a model's state and optimizer state (None before training): compare with
    :func:`same_state` to show a failed call changed nothing."""
    as_numpy = lambda tree: optree.tree_map(lambda a: np.array(ops.to_numpy(a)), tree)  # noqa: E731
    opt_state = model._training.opt_state
    return as_numpy(model.state), None if opt_state is None else as_numpy(opt_state)


def same_state(a, b) -> bool:
    """Whether two :func:`state_snapshot` results are equal, bit for bit (NaN equal to NaN)."""
    leaves_a, spec_a = optree.tree_flatten(a, none_is_leaf=True)
    leaves_b, spec_b = optree.tree_flatten(b, none_is_leaf=True)
    return spec_a == spec_b and all((x is None and y is None) or np.array_equal(x, y, equal_nan=True)
                                    for x, y in zip(leaves_a, leaves_b))


def on_accelerator() -> bool:
    """Whether torch is the active backend with its default device off the CPU (the suite on a GPU)."""
    return backends.get_backend() == "torch" and backends.default_device() != "cpu"


def recurrence_tolerance(rtol=RTOL, atol=ATOL) -> dict:
    """Tolerances for a float32 recurrence: unchanged on the CPU; on a GPU, where cuDNN's fused RNN
    kernels and cuBLAS sum in other orders at every time step (a few 1e-6 absolute on outputs, a
    few 1e-5 on gradients seen on an H200 with TF32 off), at least 3e-4 relative and 10x ``atol``."""
    if on_accelerator():
        return {"rtol": max(rtol, 3e-4), "atol": 10 * atol}
    return {"rtol": rtol, "atol": atol}


def assert_close_recurrent(actual, expected, rtol=RTOL, atol=ATOL, **kwargs):
    """:func:`assert_close` with :func:`recurrence_tolerance` (RNN outputs and gradients)."""
    assert_close(actual, expected, **recurrence_tolerance(rtol, atol), **kwargs)


def assert_equal(actual, expected, dtype=None, err_msg=""):
    """Exact comparison (integers, booleans, data movement ops); checks ``dtype`` when given."""
    if dtype is not None:
        got_dtype = ops.dtype(actual)
        assert got_dtype == dtype, f"dtype: expected {dtype}, got {got_dtype}. {err_msg}"
    got = _to_numpy(actual)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape: expected {expected.shape}, got {got.shape}. {err_msg}"
    if got.dtype.kind == "V" or str(got.dtype) == "bfloat16":
        got = got.astype(np.float64)
    if expected.dtype.kind == "V" or str(expected.dtype) == "bfloat16":
        expected = expected.astype(np.float64)
    np.testing.assert_array_equal(got, expected, err_msg=err_msg)


@contextlib.contextmanager
def float64_device(backend):
    """Run float64 checks where the backend has float64: MLX only has it on its CPU
    device (DESIGN.md), so there the default device is switched to ``cpu`` meanwhile."""
    if backend != "mlx":
        yield
        return
    original = backends.default_device("mlx")
    backends.set_default_device("cpu", "mlx")
    try:
        yield
    finally:
        backends.set_default_device(original, "mlx")


# --------------------------------------------------------------------- strategies


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes; small by default (MLX runs on a reference BLAS here)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def floats32(low, high):
    """Finite float32 values in ``[low, high]``: no subnormals (some backends flush them)
    and no negative zero (signed-zero corner cases are tested explicitly where they matter)."""
    lo, hi = np.float32(low), np.float32(high)
    if lo < low:
        lo = np.nextafter(lo, np.float32(np.inf))
    if hi > high:
        hi = np.nextafter(hi, np.float32(-np.inf))
    return st.floats(float(lo), float(hi), width=32, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False).map(lambda v: v + 0.0)


def float_arrays(shape=None, low=-10.0, high=10.0, **shape_kwargs):
    """float32 arrays with elements from :func:`floats32`."""
    return hnp.arrays(np.float32, shape if shape is not None else shapes(**shape_kwargs),
                      elements=floats32(low, high))


@st.composite
def array_and_axis(draw, min_dims=0, max_dims=3, min_side=0, max_side=4, low=-10.0, high=10.0,
                   allow_tuple=True, allow_none=True):
    """``(x, axis)`` where ``axis`` is None, an int (maybe negative) or a non-empty tuple."""
    x = draw(float_arrays(low=low, high=high, min_dims=min_dims, max_dims=max_dims,
                          min_side=min_side, max_side=max_side))
    choices = []
    if allow_none:
        choices.append(st.none())
    if x.ndim:
        choices.append(st.integers(-x.ndim, x.ndim - 1))
        if allow_tuple:
            choices.append(hnp.valid_tuple_axes(x.ndim, min_size=1))  # mixes negative axes in
    axis = draw(st.one_of(*choices)) if choices else None
    return x, axis


# ----------------------------------------------------------------- references


def logsumexp(x, axis=None, keepdims=False):
    """float64 ``log(sum(exp(x)))`` with NumPy's axis/keepdims semantics (-inf for empty)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        shift = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        out = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return out if keepdims else np.squeeze(out, axis=axis)


def same_padding(size, kernel, stride, dilation=1):
    """TF/Keras "same" padding for one spatial axis: ``(left, right)``, extra on the right."""
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


class WeaklyRecorded(layers.Layer):
    """Returns its input plus one (a new array only the caller references) and keeps a weak reference to
    it in the class's ``refs``, so a test can tell when the framework let it go (give ``refs`` a fresh
    list first, e.g. with ``monkeypatch.setattr``)."""

    refs: list = []

    def call(self, inputs):
        out = ops.add(inputs, 1.0)
        type(self).refs.append(weakref.ref(out))
        return out
