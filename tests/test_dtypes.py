"""Dtype names, promotion rules and their enforcement on every backend."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from ember import dtypes, ops
from tests.helpers import assert_equal, float64_device, native

# dtypes every backend must support (DESIGN.md "Backends"); the others are optional
# but must then fail with a TypeError naming the backend and the dtype.
REQUIRED = ("bool", "int8", "int16", "int32", "int64", "uint8",
            "float16", "bfloat16", "float32", "float64", "complex64")
OPTIONAL = tuple(name for name in dtypes.ALL if name not in REQUIRED)


@pytest.fixture
def restore_floatx():
    previous = dtypes.floatx()
    yield
    dtypes.set_floatx(previous)


# ------------------------------------------------------------------ result_type

RESULT_TABLE = [
    # same dtype
    (("float32", "float32"), "float32"),
    (("bool", "bool"), "bool"),
    (("int8", "int8"), "int8"),
    # categories: bool < int < float < complex
    (("bool", "int8"), "int8"),
    (("bool", "uint8"), "uint8"),
    (("bool", "float16"), "float16"),
    (("int32", "float16"), "float16"),
    (("int64", "float16"), "float16"),
    (("int64", "bfloat16"), "bfloat16"),
    (("uint8", "float32"), "float32"),
    (("int8", "complex64"), "complex64"),
    (("float32", "complex64"), "complex64"),
    (("float64", "complex64"), "complex128"),
    (("float16", "complex128"), "complex128"),
    (("complex64", "complex128"), "complex128"),
    # within a category the wider type wins
    (("int8", "int16"), "int16"),
    (("int16", "int64"), "int64"),
    (("uint8", "uint32"), "uint32"),
    (("float16", "float32"), "float32"),
    (("bfloat16", "float32"), "float32"),
    (("float32", "float64"), "float64"),
    (("float16", "bfloat16"), "float32"),
    # unsigned with signed: the smallest signed type holding both
    (("uint8", "int8"), "int16"),
    (("uint8", "int16"), "int16"),
    (("uint8", "int32"), "int32"),
    (("uint16", "int8"), "int32"),
    (("uint16", "int16"), "int32"),
    (("uint32", "int32"), "int64"),
    (("uint32", "int8"), "int64"),
    (("uint64", "int64"), "float64"),
    (("uint64", "int8"), "float64"),
    # weak Python scalars never widen an array
    (("float32", 1.5), "float32"),
    (("float16", 1.5), "float16"),
    (("bfloat16", 2), "bfloat16"),
    (("float64", 1), "float64"),
    (("int8", 1), "int8"),
    (("uint8", 300), "uint8"),
    (("int64", 1), "int64"),
    (("int32", 1.5), "float32"),
    (("int8", 1.5), "float32"),
    (("bool", 1), "int32"),
    (("bool", 1.5), "float32"),
    (("bool", True), "bool"),
    (("int16", True), "int16"),
    (("float16", True), "float16"),
    (("float32", 1j), "complex64"),
    (("float64", 1j), "complex128"),
    (("int32", 1j), "complex64"),
    (("complex128", 1j), "complex128"),
    (("complex64", 1.5), "complex64"),
    ((1.5, "float16"), "float16"),  # order does not matter
    ((2, "int8", 1.5), "float32"),
    # scalars alone
    ((1,), "int32"),
    ((1.5,), "float32"),
    ((True,), "bool"),
    ((1j,), "complex64"),
    ((1, 2.5), "float32"),
    ((True, 2), "int32"),
    ((1, 1j), "complex64"),
    # dtype-likes
    ((np.float32, np.int64), "float32"),
    ((np.dtype("uint8"), "int8"), "int16"),
]


@pytest.mark.parametrize(("args", "expected"), RESULT_TABLE, ids=[repr(a) for a, _ in RESULT_TABLE])
def test_result_type_table(args, expected):
    assert dtypes.result_type(*args) == expected


def test_result_type_is_symmetric_and_idempotent():
    for a, b in itertools.product(dtypes.ALL, repeat=2):
        assert dtypes.result_type(a, b) == dtypes.result_type(b, a), (a, b)
    for a in dtypes.ALL:
        assert dtypes.result_type(a) == a
        assert dtypes.result_type(a, a) == a


def test_result_type_never_narrows():
    order = {"bool": 0, "int": 1, "uint": 1, "float": 2, "bfloat": 2, "complex": 3}

    def category(name):
        return order[name.rstrip("0123456789")]

    for a, b in itertools.product(dtypes.ALL, repeat=2):
        result = dtypes.result_type(a, b)
        assert category(result) >= max(category(a), category(b)), (a, b, result)
        if category(result) == category(a) == category(b):
            bits = dtypes._BITS
            assert bits[result] >= max(bits[a], bits[b]), (a, b, result)


def test_weak_scalars_follow_floatx(restore_floatx):
    dtypes.set_floatx("float64")
    assert dtypes.result_type("int32", 1.5) == "float64"
    assert dtypes.result_type(1.5) == "float64"
    assert dtypes.result_type("float16", 1.5) == "float16"
    assert dtypes.result_type() == "float64"


# --------------------------------------------------------------- standardize_dtype

NAMES_AND_ALIASES = [(name, name) for name in dtypes.ALL] + [
    ("float", "float32"), ("double", "float64"), ("half", "float16"), ("int", "int32"),
    ("long", "int64"), ("bf16", "bfloat16"), ("f32", "float32"), ("f64", "float64"),
    ("f16", "float16"), ("complex", "complex64"), ("bool_", "bool"),
]


@pytest.mark.parametrize(("given", "expected"), NAMES_AND_ALIASES)
def test_standardize_names_and_aliases(given, expected):
    assert dtypes.standardize_dtype(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [(float, "float32"), (int, "int32"), (bool, "bool"), (complex, "complex64"), (None, "float32"),
     (np.float32, "float32"), (np.float64, "float64"), (np.int8, "int8"), (np.uint8, "uint8"),
     (np.bool_, "bool"), (np.complex64, "complex64"), (np.dtype("int16"), "int16"),
     (np.dtype(">f4"), "float32"), (ml_dtypes.bfloat16, "bfloat16"), (np.dtype(ml_dtypes.bfloat16), "bfloat16"),
     (np.arange(3, dtype=np.int64).dtype, "int64")],
)
def test_standardize_python_and_numpy(given, expected):
    assert dtypes.standardize_dtype(given) == expected


def test_standardize_torch_dtypes():
    torch = pytest.importorskip("torch")
    table = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
             torch.bfloat16: "bfloat16", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
             torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool", torch.complex64: "complex64",
             torch.complex128: "complex128", torch.half: "float16", torch.long: "int64"}
    for given, expected in table.items():
        assert dtypes.standardize_dtype(given) == expected, given


def test_standardize_mlx_dtypes():
    mx = pytest.importorskip("mlx.core")
    table = {mx.float32: "float32", mx.float16: "float16", mx.bfloat16: "bfloat16", mx.float64: "float64",
             mx.int8: "int8", mx.int16: "int16", mx.int32: "int32", mx.int64: "int64", mx.uint8: "uint8",
             mx.uint16: "uint16", mx.uint32: "uint32", mx.uint64: "uint64", mx.bool_: "bool",
             mx.complex64: "complex64"}
    for given, expected in table.items():
        assert dtypes.standardize_dtype(given) == expected, given


@pytest.mark.parametrize("bad", ["float33", "int128", "string", "Float32", "", object, np.dtype("U4"), 3.5])
def test_standardize_unknown_is_type_error(bad):
    with pytest.raises(TypeError) as info:
        dtypes.standardize_dtype(bad, argument="kernel_dtype")
    assert "kernel_dtype" in str(info.value)
    assert "float32" in str(info.value)  # lists the valid names


def test_predicates():
    assert dtypes.is_float("bfloat16") and dtypes.is_float(np.float64) and not dtypes.is_float("int8")
    assert dtypes.is_integer("uint8") and dtypes.is_integer("int64") and not dtypes.is_integer("bool")
    assert dtypes.is_complex("complex64") and not dtypes.is_complex("float64")


# ------------------------------------------------------------------ finfo / iinfo


def test_finfo():
    assert dtypes.finfo("bfloat16").bits == 16
    assert dtypes.finfo("bfloat16").eps == 2.0**-7
    assert dtypes.finfo("float16").max == 65504.0
    assert dtypes.finfo("float16").eps == 2.0**-10
    assert dtypes.finfo("float32").eps == float(np.finfo(np.float32).eps)
    assert dtypes.finfo("float32").max == float(np.finfo(np.float32).max)
    assert dtypes.finfo("float32").min == -float(np.finfo(np.float32).max)
    assert dtypes.finfo("float64").tiny == float(np.finfo(np.float64).tiny)
    assert dtypes.finfo("half").dtype == "float16"
    assert dtypes.finfo(np.float32).bits == 32


def test_iinfo():
    assert (dtypes.iinfo("int8").min, dtypes.iinfo("int8").max) == (-128, 127)
    assert (dtypes.iinfo("uint8").min, dtypes.iinfo("uint8").max) == (0, 255)
    assert dtypes.iinfo("int32").max == 2**31 - 1
    assert dtypes.iinfo("int64").min == -(2**63)
    assert dtypes.iinfo("uint16").max == 65535
    assert dtypes.iinfo("int").bits == 32


@pytest.mark.parametrize("bad", ["int32", "bool", "uint8"])
def test_finfo_rejects_non_float(bad):
    with pytest.raises(TypeError):
        dtypes.finfo(bad)


@pytest.mark.parametrize("bad", ["float32", "bool", "complex64"])
def test_iinfo_rejects_non_integer(bad):
    with pytest.raises(TypeError):
        dtypes.iinfo(bad)


# ---------------------------------------------------------------------- floatx


def test_set_floatx_rejects_non_float(restore_floatx):
    with pytest.raises(ValueError):
        dtypes.set_floatx("int32")
    with pytest.raises(TypeError):
        dtypes.set_floatx("float33")
    assert dtypes.floatx() == "float32"


@pytest.mark.parametrize("floatx", ["float64", "float16", "bfloat16", "float32"])
def test_set_floatx_changes_default_dtypes(backend, restore_floatx, floatx):
    with float64_device(backend):
        _check_floatx_defaults(floatx)


def _check_floatx_defaults(floatx):
    dtypes.set_floatx(floatx)
    assert dtypes.floatx() == floatx
    made = {
        "zeros": ops.zeros((2,)),
        "ones": ops.ones((2,)),
        "full(1.5)": ops.full((2,), 1.5),
        "eye": ops.eye(2),
        "linspace": ops.linspace(0, 1, 3),
        "arange(0.5, 3)": ops.arange(0.5, 3),
        "convert_to_tensor([1.5])": ops.convert_to_tensor([1.5]),
        "random.uniform": ops.random.uniform((2,), seed=1),
        "random.normal": ops.random.normal((2,), seed=1),
        "random.truncated_normal": ops.random.truncated_normal((2,), seed=1),
        "mean(int32)": ops.mean(native([1, 2], dtype="int32")),
        "divide(int32, int32)": ops.divide(native([1, 2], dtype="int32"), native([2, 2], dtype="int32")),
        "sqrt(int32)": ops.sqrt(native([1, 4], dtype="int32")),
        "add(int32, 1.5)": ops.add(native([1, 2], dtype="int32"), 1.5),
    }
    wrong = {label: ops.dtype(value) for label, value in made.items() if ops.dtype(value) != floatx}
    assert not wrong, f"expected {floatx}: {wrong}"
    # explicit float inputs keep their dtype whatever floatx is
    assert ops.dtype(ops.add(native([1.0], dtype="float32"), 1.5)) == "float32"
    assert ops.dtype(ops.zeros((2,), dtype="float32")) == "float32"


def test_float64_works_on_mlx_cpu(restore_floatx):
    pytest.importorskip("mlx.core")
    from ember import using_backend

    with using_backend("mlx"):
        with float64_device("mlx"):
            x = ops.convert_to_tensor(np.array([1.0, 2.0 ** -40], dtype=np.float64))
            assert ops.dtype(x) == "float64"
            y = ops.add(x, x)
            assert ops.dtype(y) == "float64"
            np.testing.assert_array_equal(ops.to_numpy(y), [2.0, 2.0 ** -39])
            assert ops.dtype(ops.zeros((2,), dtype="float64")) == "float64"
            dtypes.set_floatx("float64")
            assert ops.dtype(ops.random.normal((3,), seed=0)) == "float64"


# -------------------------------------------------------------- per-backend cast


def _values(name):
    """Values exactly representable in ``name`` and in float32."""
    if name == "bool":
        return np.array([True, False, True])
    if name.startswith("uint"):
        return np.array([0, 1, 2, 100, 255])
    if name.startswith("int"):
        return np.array([0, 1, -2, 100, -128, 127])
    if name.startswith("complex"):
        return np.array([1 + 2j, -0.5j, 3.25])
    return np.array([0.0, 1.5, -2.25, 100.0, 0.125, -0.0])


def _supported_or_type_error(backend, name, call):
    """Run ``call``; a dtype outside REQUIRED may instead raise TypeError naming backend and dtype."""
    if name in REQUIRED:
        return call()
    try:
        return call()
    except TypeError as error:
        message = str(error)
        assert name in message and backend in message, f"unhelpful error for {name} on {backend}: {message}"
        return None


@pytest.mark.parametrize("name", dtypes.ALL)
def test_convert_numpy_array_keeps_dtype(backend, name):
    with float64_device(backend):
        _convert_numpy_array_keeps_dtype(backend, name)


def _convert_numpy_array_keeps_dtype(backend, name):
    values = _values(name).astype(dtypes.to_numpy_dtype(name))
    x = _supported_or_type_error(backend, name, lambda: ops.convert_to_tensor(values))
    if x is None:
        return
    assert ops.dtype(x) == name
    back = ops.to_numpy(x)
    assert back.dtype == dtypes.to_numpy_dtype(name)
    np.testing.assert_array_equal(back, values)


@pytest.mark.parametrize("name", dtypes.ALL)
def test_cast_round_trip(backend, name):
    with float64_device(backend):
        _cast_round_trip(backend, name)


def _cast_round_trip(backend, name):
    values = _values(name)
    real = values.real.astype(np.float32) if np.iscomplexobj(values) else values.astype(np.float32)
    source = native(real)
    y = _supported_or_type_error(backend, name, lambda: ops.cast(source, name))
    if y is None:
        return
    assert ops.dtype(y) == name
    expected = real.astype(dtypes.to_numpy_dtype(name))
    got = ops.to_numpy(y)
    assert got.dtype == dtypes.to_numpy_dtype(name)
    np.testing.assert_array_equal(got, expected)
    if not name.startswith("complex"):
        back = ops.cast(y, "float32")
        assert ops.dtype(back) == "float32"
        np.testing.assert_array_equal(ops.to_numpy(back), expected.astype(np.float32))
    # the Ember name and native/NumPy dtype objects are interchangeable
    assert ops.dtype(ops.cast(source, dtypes.to_numpy_dtype(name))) == name


def test_cast_accepts_aliases_and_dtype_likes(backend):
    x = native([1.0, 2.0])
    assert ops.dtype(ops.cast(x, "double")) == "float64"
    assert ops.dtype(ops.cast(x, np.int16)) == "int16"
    assert ops.dtype(ops.cast(x, "bf16")) == "bfloat16"
    assert ops.dtype(ops.cast(x, int)) == "int32"
    assert ops.dtype(ops.cast(x, bool)) == "bool"


def test_cast_float_to_int_truncates_toward_zero(backend):
    x = native([-1.7, 1.7, 2.5, -0.5])
    assert_equal(ops.cast(x, "int32"), [-1, 1, 2, 0], dtype="int32")


def test_cast_to_bool_is_nonzero(backend):
    x = native([0.0, 1.0, -2.5, 0.25])
    assert_equal(ops.cast(x, "bool"), [False, True, True, True], dtype="bool")


def test_bfloat16_rounds_like_ml_dtypes(backend):
    values = np.array([1.0 + 2**-9, 3.14159, -1e-3, 65504.0, 1e30], dtype=np.float32)
    expected = values.astype(ml_dtypes.bfloat16)
    y = ops.cast(native(values), "bfloat16")
    got = ops.to_numpy(y)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))
    x = ops.convert_to_tensor(expected)  # bfloat16 NumPy arrays convert losslessly
    assert ops.dtype(x) == "bfloat16"
    np.testing.assert_array_equal(ops.to_numpy(x).astype(np.float32), expected.astype(np.float32))


@pytest.mark.parametrize("bad", ["float33", "int128", "nope"])
def test_unknown_dtype_name_is_type_error(backend, bad):
    calls = {
        "zeros": lambda: ops.zeros((2,), dtype=bad),
        "ones": lambda: ops.ones((2,), dtype=bad),
        "full": lambda: ops.full((2,), 1, dtype=bad),
        "arange": lambda: ops.arange(3, dtype=bad),
        "eye": lambda: ops.eye(2, dtype=bad),
        "cast": lambda: ops.cast(native([1.0]), bad),
        "convert_to_tensor": lambda: ops.convert_to_tensor([1.0], dtype=bad),
        "zeros_like": lambda: ops.zeros_like(native([1.0]), dtype=bad),
        "random.normal": lambda: ops.random.normal((2,), dtype=bad),
        "random.uniform": lambda: ops.random.uniform((2,), dtype=bad),
        "one_hot": lambda: ops.one_hot(native([0, 1]), 3, dtype=bad),
    }
    for label, call in calls.items():
        with pytest.raises(TypeError) as info:
            call()
        assert bad in str(info.value), f"{label}: {info.value}"


# ------------------------------------------------------ result dtypes per backend

GRID = REQUIRED


def _grid_values(name):
    if name == "bool":
        return np.array([True, False, True])
    if name.startswith("complex"):
        return np.array([1.0, 0.0, 2.0], dtype=np.complex64)
    return np.array([1, 0, 2]).astype(dtypes.to_numpy_dtype(name))


def _numeric(values):
    return values.astype(np.complex128) if values.dtype.kind == "c" else values.astype(np.float64)


def _expected_dtype(op, a, b):
    result = dtypes.result_type(a, b)
    if op in ("equal", "less", "not_equal"):
        return "bool"
    if op == "divide" and not (dtypes.is_float(result) or dtypes.is_complex(result)):
        return dtypes.floatx()
    return result


def _unsupported_result(error, promoted, backend):
    """A promoted dtype outside REQUIRED (complex128 from float64 + complex64) may be
    refused by a backend that lacks it, with a TypeError naming the backend and dtype."""
    message = str(error)
    return (isinstance(error, TypeError) and promoted in OPTIONAL and promoted in message
            and backend in message)


BINARY_GRID_OPS = ["add", "multiply", "subtract", "maximum", "divide", "equal", "less", "not_equal"]


@pytest.mark.parametrize("op", BINARY_GRID_OPS)
def test_binary_result_dtypes_on_grid(backend, op):
    with float64_device(backend):
        _binary_result_dtypes_on_grid(backend, op)


def _binary_result_dtypes_on_grid(backend, op):
    problems = []
    for a, b in itertools.product(GRID, repeat=2):
        if op == "subtract" and a == b == "bool":
            continue  # NumPy rejects boolean subtraction too
        if op in ("maximum", "less") and "complex64" in (a, b):
            continue  # complex numbers are not ordered
        expected = _expected_dtype(op, a, b)
        try:
            result = getattr(ops, op)(native(_grid_values(a)), native(_grid_values(b)))
            got = ops.dtype(result)
        except Exception as error:  # noqa: BLE001  (collected, reported below)
            if not _unsupported_result(error, dtypes.result_type(a, b), backend):
                problems.append(f"{a},{b}: {type(error).__name__}: {error}"[:160])
            continue
        if got != expected:
            problems.append(f"{a},{b}: expected {expected}, got {got}")
            continue
        if op in ("add", "multiply"):
            x, y = _numeric(_grid_values(a)), _numeric(_grid_values(b))
            want = x + y if op == "add" else x * y
            if a == b == "bool":
                want = np.minimum(want, 1)
            if not np.array_equal(_numeric(ops.to_numpy(result)), want):
                problems.append(f"{a},{b}: values {ops.to_numpy(result)} != {want}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


SCALARS = [2, 2.5, True, 1j]


@pytest.mark.parametrize("op", ["add", "multiply", "subtract", "divide", "maximum", "power"])
def test_binary_result_dtypes_with_python_scalars(backend, op):
    with float64_device(backend):
        _binary_result_dtypes_with_python_scalars(backend, op)


def _binary_result_dtypes_with_python_scalars(backend, op):
    problems = []
    for name, scalar in itertools.product(GRID, SCALARS):
        if isinstance(scalar, complex) and op in ("maximum", "power"):
            continue
        if name == "complex64" and op == "maximum":
            continue
        if op == "subtract" and name == "bool" and isinstance(scalar, bool):
            continue
        if op == "power" and name == "bool" and isinstance(scalar, bool):
            continue
        expected = _expected_dtype(op, name, scalar)
        for order in ("array_first", "scalar_first"):
            args = (native(_grid_values(name)), scalar)
            if order == "scalar_first":
                args = args[::-1]
            try:
                got = ops.dtype(getattr(ops, op)(*args))
            except Exception as error:  # noqa: BLE001
                if not _unsupported_result(error, dtypes.result_type(name, scalar), backend):
                    problems.append(f"{name} {scalar!r} {order}: {type(error).__name__}: {error}"[:160])
                continue
            if got != expected:
                problems.append(f"{name} {scalar!r} {order}: expected {expected}, got {got}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_result_type_is_associative_and_commutative():
    """A lattice join: any argument order gives the same dtype."""
    import itertools

    from ember import dtypes as _dtypes

    for a, b, c in itertools.product(_dtypes.ALL, repeat=3):
        expected = _dtypes.result_type(a, b, c)
        assert _dtypes.result_type(c, a, b) == expected, (a, b, c)
        assert _dtypes.result_type(b, c, a) == expected, (a, b, c)
    # Nesting is not the same thing: result_type("int8", "uint64") is made concrete (float64),
    # so result_type("float16", result_type("int8", "uint64")) is float64, as in JAX.
