"""``ember.Tensor``: operators, indexing, iteration, conversion and pickling on every backend.

References are NumPy (float64 where values are compared) computed on the same data.
"""

from __future__ import annotations

import copy
import doctest
import operator
import pickle
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import backends, ops
from tests.tolerances import FLOAT32

RTOL = 1e-5  # float32 results vs a float64 NumPy reference
PICKLE_DTYPES = ("float32", "float16", "bfloat16", "int32", "bool")


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype="float32", seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(low, high, size=shape)
    if dtype == "bool":
        return values > 0
    if "int" in dtype:
        return np.round(values).astype(dtype)
    return values.astype(np_dtype(dtype))


def check(result, expected, dtype=None, rtol=RTOL):
    """``result`` is a Tensor of the active backend with ``expected``'s values (and ``dtype``)."""
    assert isinstance(result, ember.Tensor), type(result)
    assert result.backend == ember.get_backend()
    assert result.dtype == ops.dtype(result._native)
    if dtype is not None:
        assert result.dtype == dtype
    got = np.asarray(result)
    expected = np.asarray(expected)
    assert got.shape == expected.shape
    if expected.dtype == bool:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                                   atol=FLOAT32["atol"])


def other_backends(name):
    return [b for b in backends.available() if b != name]


# ------------------------------------------------------------------ construction


def test_construction_stores_dtype_backend_device(backend):
    data = sample((2, 3))
    t = ember.tensor(data)
    assert ember.is_tensor(t) and not ember.is_tensor(data) and not ember.is_tensor(t._native)
    assert ember.EmberTensor is ember.Tensor
    assert ops.is_array(t._native)
    assert (t.backend, t.dtype, t.device) == (backend, "float32", ops.get_device(t._native))
    assert {"backend", "dtype", "device"} <= set(ember.Tensor.__slots__)  # stored, not derived
    assert (t.shape, t.ndim, t.size, len(t)) == ((2, 3), 2, 6, 2)
    assert ember.tensor(3.0).shape == () and ember.tensor(3.0).ndim == 0
    assert ember.tensor([1, 2]).dtype == "int32"
    assert ember.tensor([1.0, 2.0]).dtype == "float32"
    assert ember.tensor([True]).dtype == "bool"
    assert ember.Tensor([1.0], dtype="float16").dtype == "float16"


def test_convert_to_tensor_returns_same_object_when_possible(backend):
    t = ember.convert_to_tensor([1.0, 2.0])
    assert ember.convert_to_tensor(t) is t
    assert ember.convert_to_tensor(t, dtype="float32", device=t.device) is t
    half = ember.convert_to_tensor(t, dtype="float16")
    assert half is not t and half.dtype == "float16" and t.dtype == "float32"
    native = ops.ones((2,))
    wrapped = ember.convert_to_tensor(native)
    assert wrapped._native is native and wrapped.backend == backend
    with pytest.raises(TypeError, match="floot32"):
        ember.convert_to_tensor([1.0], dtype="floot32")


def test_convert_to_tensor_converts_other_backends_explicitly(backend):
    for other in other_backends(backend):
        with ember.using_backend(other):
            foreign = ember.tensor([1.5, 2.5], dtype="float16")
            native = ops.convert_to_tensor([1, 2])
        moved = ember.convert_to_tensor(foreign)
        assert (moved.backend, moved.dtype) == (backend, "float16")
        check(moved, [1.5, 2.5])
        check(ember.convert_to_tensor(native), [1, 2], dtype="int32")


def test_tensor_copies_mutable_input(backend):
    data = np.array([1.0, 2.0], dtype=np.float32)
    t = ember.tensor(data)
    data[0] = 99.0
    check(t, [1.0, 2.0])
    native = ops.convert_to_tensor(np.array([1.0, 2.0], dtype=np.float32))
    copied = ember.tensor(native)
    assert copied._native is not native
    check(copied, [1.0, 2.0], dtype="float32")


# ------------------------------------------------------------------ operators

BINARY = [
    ("+", operator.add), ("-", operator.sub), ("*", operator.mul), ("/", operator.truediv),
    ("//", operator.floordiv), ("%", operator.mod), ("**", operator.pow),
]
COMPARE = [
    ("==", operator.eq), ("!=", operator.ne), ("<", operator.lt), ("<=", operator.le),
    (">", operator.gt), (">=", operator.ge),
]


def operands(symbol):
    a = sample((3, 4), seed=1)
    b = sample((4,), seed=2)
    if symbol in ("//", "%"):
        b = np.where(np.abs(b) < 0.5, 1.5, b).astype(np.float32)
    if symbol == "**":
        a = np.abs(a).astype(np.float32) + 0.5
    return a, b


@pytest.mark.parametrize("symbol,fn", BINARY + COMPARE, ids=[s for s, _ in BINARY + COMPARE])
def test_binary_operators_match_numpy(backend, symbol, fn):
    a, b = operands(symbol)
    ta, tb = ember.tensor(a), ember.tensor(b)
    expected = fn(a.astype(np.float64), b.astype(np.float64))
    dtype = "bool" if expected.dtype == bool else "float32"
    check(fn(ta, tb), expected, dtype)  # Tensor op Tensor
    check(fn(ta, b), expected, dtype)  # Tensor op NumPy
    check(fn(ta, ops.convert_to_tensor(b)), expected, dtype)  # Tensor op native
    check(fn(a, tb), expected, dtype)  # NumPy op Tensor: reflected, not swallowed by NumPy
    check(fn(ta, 2.0), fn(a.astype(np.float64), 2.0), dtype)  # weak scalar keeps float32
    if symbol in dict(BINARY):
        check(fn(2.0, tb), fn(2.0, b.astype(np.float64)), dtype)  # reflected scalar
        check(fn(a.tolist(), tb), expected, dtype)  # nested list


def test_native_on_the_left(backend):
    a, b = operands("+")
    result = ops.convert_to_tensor(a) + ember.tensor(b)
    if backend == "mlx":
        # MLX arrays have no reflected-operator hook; they read the Tensor via __mlx_array__.
        np.testing.assert_allclose(np.asarray(result), a + b, rtol=RTOL)
    else:
        check(result, a.astype(np.float64) + b)


def test_matmul_unary_and_logical(backend):
    a, b, v = sample((3, 4), seed=3), sample((4, 2), seed=4), sample((4,), seed=5)
    ta = ember.tensor(a)
    a64 = a.astype(np.float64)
    check(ta @ ember.tensor(b), a64 @ b, "float32")
    check(ta @ v, a64 @ v, "float32")
    check(ember.tensor(v) @ ember.tensor(b), v.astype(np.float64) @ b, "float32")
    check(a @ ember.tensor(b), a64 @ b, "float32")  # __rmatmul__
    check(-ta, -a64, "float32")
    check(abs(ta), np.abs(a64), "float32")
    assert +ta is ta
    mask = (ta > 0) & (ta < 2)
    check(mask, (a > 0) & (a < 2), "bool")
    check((ta > 0) | (ta < -2), (a > 0) | (a < -2), "bool")
    check((ta > 0) ^ True, (a > 0) ^ True, "bool")
    check(~(ta > 0), ~(a > 0), "bool")
    with pytest.raises(TypeError, match="bool"):
        ember.tensor([1, 2]) & 1
    with pytest.raises(TypeError, match="bool"):
        ~ember.tensor([1, 2])
    assert 0.0 not in ember.tensor([1.0, 2.0]) and 2.0 in ember.tensor([1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32", "int8"])
def test_operators_preserve_dtype(backend, dtype):
    data = sample((2, 3), dtype, low=1, high=4)
    t = ember.tensor(data)
    assert t.dtype == dtype
    assert (t + 1).dtype == dtype and (2 * t).dtype == dtype and (t - t).dtype == dtype
    assert (-t).dtype == dtype and abs(t).dtype == dtype and (t // 2).dtype == dtype
    assert (t < 1).dtype == "bool"
    assert (t / 2).dtype == (dtype if dtype in ("float16", "bfloat16", "float32") else "float32")
    assert (t + 1.5).dtype == (dtype if "float" in dtype else "float32")
    assert t[0].dtype == dtype and t[:, 1:].dtype == dtype
    assert all(row.dtype == dtype and row.device == t.device for row in t)


def test_mixed_precision_promotion(backend):
    assert (ember.tensor([1], dtype="int32") + ember.tensor([1.0], dtype="float16")).dtype == "float16"
    assert (ember.tensor([1], dtype="uint8") + ember.tensor([1], dtype="int8")).dtype == "int16"
    assert (ember.tensor([1.0], dtype="bfloat16") * ember.tensor([1.0], dtype="float16")).dtype == "float32"


@settings(max_examples=15, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    broadcast=st.booleans(),
    op=st.sampled_from(["+", "-", "*", "/", "<", "=="]),
    seed=st.integers(0, 2**16),
)
def test_operators_property(shape, broadcast, op, seed):
    fn = dict(BINARY + COMPARE)[op]
    a = sample(tuple(shape), seed=seed)
    b = sample(tuple(shape[1:]) if broadcast else tuple(shape), seed=seed + 1)
    b = np.where(np.abs(b) < 0.1, 1.0, b).astype(np.float32)
    for name in backends.available():
        with ember.using_backend(name):
            expected = fn(a.astype(np.float64), b.astype(np.float64))
            check(fn(ember.tensor(a), ember.tensor(b)), expected)


def test_operators_go_through_ember_ops_at_call_time(backend, monkeypatch):
    # Gradient tapes re-bind ember.ops functions; Tensor operators must call through them.
    calls = []
    original = ops.multiply

    def recording(x1, x2):
        calls.append((x1, x2))
        return original(x1, x2)

    t = ember.tensor([1.0, 2.0])
    monkeypatch.setattr(ops, "multiply", recording)
    check(t * 3.0, [3.0, 6.0])
    check(3.0 * t, [3.0, 6.0])
    assert len(calls) == 2 and calls[0][0] is t._native and calls[1][1] is t._native


def test_gradient_tape_sees_tensor_operators(backend):
    from ember.autodiff import GradientTape

    x = ember.tensor([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = (x * x + 2.0 * x)[1:]  # operators and indexing
        y = y.at[0].add(x[0] ** 3)  # functional update
        z = ops.sum(y / 2.0)
    grad = tape.gradient(z, x)
    # z = (x1^2 + 2 x1 + x0^3 + x2^2 + 2 x2) / 2
    np.testing.assert_allclose(np.asarray(grad), [1.5, 3.0, 4.0], rtol=RTOL)


def test_ops_accept_tensors(backend):
    a = sample((2, 3))
    t = ember.tensor(a)
    result = ops.add(t, t)
    assert ops.is_array(result) and not ember.is_tensor(result)
    np.testing.assert_allclose(ops.to_numpy(result), 2 * a, rtol=RTOL)
    np.testing.assert_allclose(ops.to_numpy(ops.sum(t, axis=0)), a.astype(np.float64).sum(0), rtol=RTOL)
    assert ops.shape(ops.reshape(t, (3, 2))) == (3, 2)
    check(t + ops.exp(t), a + np.exp(a.astype(np.float64)))


# ------------------------------------------------------------------ indexing

KEYS = [
    1, -1, (0, 2), (-1, -2), slice(1, None), slice(None, None, -1), slice(None, None, 2),
    (slice(None), 1), (None, 0), (0, None, slice(1, 3)), Ellipsis, (Ellipsis, 1), (1, Ellipsis),
    np.array([0, 2]), np.array([-1, 0, 0]), (np.array([0, 1]), np.array([2, 3])),
    (slice(None), np.array([3, 0])), np.array([True, False, True]), (), [0, 2],
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k).replace(" ", "") for k in KEYS])
def test_indexing_matches_numpy(backend, key):
    a = sample((3, 4), "int32", seed=7, low=-50, high=50)
    t = ember.tensor(a)
    check(t[key], a[key], "int32")


def test_indexing_with_masks_and_tensor_keys(backend):
    a = sample((3, 4), seed=8)
    t = ember.tensor(a)
    check(t[a > 0], a[a > 0], "float32")
    check(t[t > 0], a[a > 0], "float32")
    check(t[ember.tensor([2, 0])], a[[2, 0]], "float32")
    check(t[ember.tensor(1), 1:], a[1, 1:], "float32")
    check(t[ember.tensor([[0, 1], [2, 2]])], a[np.array([[0, 1], [2, 2]])], "float32")
    assert [10, 20, 30][ember.tensor(2)] == 30  # __index__


def test_indexing_errors(backend):
    t = ember.tensor(sample((3, 4)))
    with pytest.raises(IndexError, match="5"):
        t[5]
    with pytest.raises(IndexError, match="-4"):
        t[-4]
    with pytest.raises(IndexError):
        t[0, 9]
    with pytest.raises(TypeError, match="immutable.*at\\["):
        t[0] = 1.0
    for other in other_backends(backend):
        with ember.using_backend(other):
            foreign_key = ember.tensor([0, 1])
        with pytest.raises(TypeError, match=f"{backend}.*{other}|{other}.*{backend}"):
            t[foreign_key]


def test_iteration_yields_tensors(backend):
    a = sample((3, 2), "float16")
    t = ember.tensor(a)
    rows = list(t)
    assert len(rows) == 3
    for row, expected in zip(rows, a):
        check(row, expected, "float16")
        assert row.device == t.device
    scalars = list(ember.tensor([1, 2, 3]))
    assert all(isinstance(s, ember.Tensor) and s.shape == () and s.dtype == "int32" for s in scalars)
    assert [int(s) for s in scalars] == [1, 2, 3]
    assert list(ember.tensor(np.zeros((0, 2), np.float32))) == []
    zero_d = ember.tensor(1.0)
    with pytest.raises(TypeError, match="0-d"):
        iter(zero_d)
    with pytest.raises(TypeError, match="0-d"):
        len(zero_d)


# ------------------------------------------------------------------ functional updates


def test_at_set_add_get(backend):
    a = sample((3, 4), seed=9)
    t = ember.tensor(a)
    for key, values in [
        ((1, 2), 5.0), (slice(None), 0.0), ((slice(None), 0), np.array([1.0, 2.0, 3.0], np.float32)),
        (a > 0, -1.0), (np.array([2, 0]), np.arange(4, dtype=np.float32)), ((Ellipsis, -1), 7.0),
        (np.array([False, False, False]), 1.0),
    ]:
        expected = a.copy()
        expected[key] = values
        check(t.at[key].set(values), expected, "float32")
        expected = a.copy()
        expected[key] += values
        check(t.at[key].add(values), expected, "float32")
        check(t.at[key].get(), a[key], "float32")
    check(t, a)  # unchanged: functional updates never mutate
    check(t.at[0].set(ember.tensor([1.0, 2.0, 3.0, 4.0])), np.vstack([[1, 2, 3, 4], a[1:]]), "float32")


def test_at_add_accumulates_repeated_indices(backend):
    t = ember.tensor([0, 0, 0, 0])
    expected = np.zeros(4, np.int32)
    np.add.at(expected, [0, 0, 2, 0], 1)
    check(t.at[[0, 0, 2, 0]].add(1), expected, "int32")
    check(t.at[np.array([1, 1])].add(np.array([2, 3], np.int32)), [0, 5, 0, 0], "int32")


def test_at_dtype_and_errors(backend):
    t = ember.tensor([1, 2, 3], dtype="int8")
    assert t.at[0].set(5).dtype == "int8"
    assert ember.tensor([1.0], dtype="bfloat16").at[0].add(1.0).dtype == "bfloat16"
    with pytest.raises(IndexError):
        t.at[7].set(0)
    with pytest.raises(ValueError, match="shape"):
        t.at[0:2].set(np.array([1, 2, 3]))
    check(ember.tensor(4.0).at[()].set(2.0), 2.0)


# ------------------------------------------------------------------ conversion


def test_array_protocol_numpy_tolist_item(backend):
    a = sample((2, 3))
    t = ember.tensor(a)
    view = np.asarray(t)
    np.testing.assert_array_equal(view, a)
    assert view.dtype == np.float32 and not view.flags.writeable
    if backend == "numpy":
        assert np.shares_memory(view, t._native)  # zero-copy
    copy_ = np.array(t)
    assert copy_.flags.writeable
    copy_[0, 0] = 100.0
    assert float(t[0, 0]) == pytest.approx(float(a[0, 0]))
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    out = t.numpy()
    assert isinstance(out, np.ndarray) and out.flags.writeable
    np.testing.assert_array_equal(out, a)
    assert t.tolist() == a.tolist()
    assert ember.tensor([1.5], dtype="bfloat16").numpy().dtype == ml_dtypes.bfloat16
    assert ember.tensor([[1.5]], dtype="bfloat16").tolist() == [[1.5]]


def test_python_scalars(backend):
    assert ember.tensor([[2.5]]).item() == 2.5 and isinstance(ember.tensor(2.5).item(), float)
    assert ember.tensor(3).item() == 3 and isinstance(ember.tensor(3).item(), int)
    assert float(ember.tensor(1.5, dtype="bfloat16")) == 1.5
    assert int(ember.tensor(7)) == 7 and int(ember.tensor(2.9)) == 2
    assert bool(ember.tensor(True)) is True and bool(ember.tensor([0.0])) is False
    assert f"{ember.tensor(1.23456):.2f}" == "1.23"
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="one element"):
        ember.tensor([1, 2]).item()
    with pytest.raises(TypeError, match="integer"):
        [1, 2][ember.tensor(1.0)]


def test_repr_shows_values_dtype_backend_device(backend):
    text = repr(ember.tensor([1.5, -2.0], dtype="bfloat16"))
    assert text.startswith("Tensor([")
    assert "1.5" in text and "-2" in text
    assert "dtype=bfloat16" in text and f"backend='{backend}'" in text and f"device='{ops.get_device()}'" in text
    assert "shape=(0, 3)" in repr(ember.tensor(np.zeros((0, 3), np.float32)))
    assert "7" in repr(ember.tensor(7))


def test_astype_and_to(backend):
    a = sample((2, 3))
    t = ember.tensor(a)
    assert t.astype("float32") is t
    check(t.astype("int32"), a.astype(np.int32), "int32")
    check(t.astype("float16"), a.astype(np.float16), "float16", rtol=1e-3)
    if not (backend == "mlx" and ops.get_device() == "gpu"):  # MLX has float64 on the CPU only
        check(t.astype(np.float64), a, "float64")
    assert t.astype("bool").dtype == "bool"
    with pytest.raises(TypeError, match="floot32"):
        t.astype("floot32")
    assert t.to(t.device) is t
    with pytest.raises(ValueError, match="nowhere"):
        t.to("nowhere")


@pytest.mark.parametrize("dtype", PICKLE_DTYPES)
def test_to_backend_all_pairs(dtype):
    data = sample((2, 3), dtype, seed=11)
    for source in backends.available():
        with ember.using_backend(source):
            t = ember.tensor(data)
        for target in backends.available():
            moved = t.to_backend(target)  # works whatever backend is active (numpy here)
            assert (moved.backend, moved.dtype) == (target, dtype)
            np.testing.assert_array_equal(np.asarray(moved), data)
    with pytest.raises(ValueError, match="jax"):
        ember.tensor([1.0]).to_backend("jax")


# ------------------------------------------------------------------ backend mixing / immutability


def test_mixing_backends_is_a_clear_error(backend):
    t = ember.tensor([1.0, 2.0])
    for other in other_backends(backend):
        with ember.using_backend(other):
            u = ember.tensor([1.0, 2.0])
            with pytest.raises(TypeError, match=f"'{backend}'.*'{other}'.*to_backend"):
                t + 1.0  # t's backend is not active
            with pytest.raises(TypeError, match=f"'{backend}'.*'{other}'"):
                t[0]
            assert repr(t) and t.tolist() == [1.0, 2.0] and t.shape == (2,)  # inspection still works
        with pytest.raises(TypeError, match=f"'{backend}'.*'{other}'"):
            t + u
        with pytest.raises(TypeError, match=f"'{other}'.*'{backend}'"):
            u * t
        if other != "numpy":  # NumPy arrays are valid input everywhere; torch/MLX arrays are foreign
            with pytest.raises(TypeError, match=other):
                t + u._native


def test_tensor_is_immutable_and_unhashable(backend):
    t = ember.tensor([1.0])
    with pytest.raises(AttributeError, match="immutable.*at\\["):
        t.dtype = "float16"
    with pytest.raises(AttributeError, match="immutable"):
        t.new_attribute = 1
    with pytest.raises(AttributeError, match="immutable"):
        del t.backend
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    assert copy.copy(t) is t and copy.deepcopy(t) is t
    assert t.__add__("a") is NotImplemented and t.__radd__(None) is NotImplemented
    with pytest.raises(TypeError):
        t + "a"


# ------------------------------------------------------------------ pickling


@pytest.mark.parametrize("dtype", PICKLE_DTYPES)
def test_pickle_round_trip_within_backend(backend, dtype):
    data = sample((3, 2), dtype, seed=12)
    t = ember.tensor(data)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        blob = pickle.dumps(t, protocol=protocol)
        assert b"ember.backends" not in blob  # never a backend object
        restored = pickle.loads(blob)
        assert (restored.backend, restored.dtype, restored.device) == (backend, dtype, t.device)
        np.testing.assert_array_equal(np.asarray(restored), data)
    state = t.__getstate__()
    assert set(state) == {"data", "dtype", "shape", "backend", "device"}
    assert isinstance(state["data"], bytes) and state["shape"] == (3, 2)
    empty = pickle.loads(pickle.dumps(ember.tensor(np.zeros((0, 2), np_dtype(dtype)))))
    assert empty.shape == (0, 2) and empty.dtype == dtype


@pytest.mark.parametrize("dtype", PICKLE_DTYPES)
def test_pickle_across_backends(dtype, monkeypatch):
    """All pairs: pickled on ``source``, loaded while ``target`` is active."""
    data = sample((2, 3), dtype, seed=13)
    names = backends.available()
    blobs = {}
    for source in names:
        with ember.using_backend(source):
            blobs[source] = pickle.dumps(ember.tensor(data))
    for source in names:
        for target in names:
            with ember.using_backend(target):
                restored = pickle.loads(blobs[source])  # source installed: back on source
                assert (restored.backend, restored.dtype) == (source, dtype)
                np.testing.assert_array_equal(np.asarray(restored), data)
                if source == target:
                    continue
                with monkeypatch.context() as patch:  # source "not installed": onto target, warned
                    patch.setattr(backends, "is_installed", lambda name, _s=source: name != _s)
                    with pytest.warns(RuntimeWarning, match=f"'{source}'.*'{target}'"):
                        moved = pickle.loads(blobs[source])
                assert (moved.backend, moved.dtype) == (target, dtype)
                np.testing.assert_array_equal(np.asarray(moved), data)


def test_pickle_unknown_backend_and_device_fall_back(backend):
    t = ember.tensor([1.0, 2.0], dtype="float16")
    state = dict(t.__getstate__(), backend="jax")
    restored = ember.Tensor.__new__(ember.Tensor)
    with pytest.warns(RuntimeWarning, match="'jax'"):
        restored.__setstate__(state)
    assert (restored.backend, restored.dtype) == (backend, "float16")
    state = dict(t.__getstate__(), device="tpu:7")
    restored = ember.Tensor.__new__(ember.Tensor)
    with pytest.warns(RuntimeWarning, match="tpu:7"):
        restored.__setstate__(state)
    assert restored.device == ops.get_device() and restored.tolist() == [1.0, 2.0]


def test_docstring_examples():
    module = sys.modules["ember._tensor"]  # ``ember.tensor`` the attribute is the function
    from ember import _tensor_at

    for mod in (module, _tensor_at):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, mod.__name__


def test_native_mlx_array_with_a_size_one_real_tensor_stays_real():
    pytest.importorskip("mlx.core")
    import mlx.core as mx

    with ember.using_backend("mlx"):
        t = ember.convert_to_tensor(np.array([2.0], "float32"))
        result = mx.ones((3, 1)) + t
        assert result.dtype == mx.float32 and np.asarray(result).ravel().tolist() == [3.0, 3.0, 3.0]
        with pytest.raises(TypeError, match="complex"):
            complex(t)
        assert complex(ember.convert_to_tensor(np.array(1 + 2j, "complex64"))) == 1 + 2j
