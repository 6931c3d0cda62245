"""Every backend gives the same result dtype and values for bool, integer and float inputs.

Two kinds of test:

* ``test_backends_agree``: for every op of the protocol (``ember.backends._spec``) that takes
  arrays, one case per op (or a few: Python-scalar operands, other modes). Each case runs
  on every installed backend for the input dtypes in :data:`DTYPES`; the results must have
  the same dtype and the same values (compared in float64/complex128), or every backend
  must raise the same exception type. No reference is needed: the backends are compared
  with each other. ``test_every_spec_op_is_swept`` keeps the case list complete.
* The ``test_rule_*`` tests pin the rule chosen where the libraries differ, against NumPy
  float64 references written here (the table is in each op's ``_spec`` docstring):

  ====================================  ==================================================
  op                                    result dtype
  ====================================  ==================================================
  ``clip(x, x_min, x_max)``             ``result_type(x, x_min, x_max)`` (weak Python
                                        scalars: int32 + 2.5 -> float32, int8 + 2 -> int8);
                                        a bool result becomes int32 (Keras)
  bool arithmetic                       ``square(bool)``, and ``floor_divide``/``mod``/
                                        ``power`` of two bools: int32 (bool counts as 0/1,
                                        as ``sum(bool)``; JAX's numeric promotion);
                                        otherwise ``result_type``
  ``segment_sum(bool)``                 int32 (counts, as ``sum``); other dtypes kept
  ``relu``, ``relu6``                   ``max(x, 0)`` by the weak-scalar rule: bool -> int32,
                                        integers keep their dtype (exact), floats kept
  other activations                     integers and bool -> ``floatx()`` (transcendental)
  ``one_hot`` indices                   integers; floats cast toward zero (Keras); bool -> TypeError
  ``power(int, negative Python int)``   ValueError (NumPy's rule)
  int array op out-of-range Python int  OverflowError (NumPy 2 / JAX weak-scalar rule),
                                        also for comparisons and ``full``/``full_like``
  ``subtract(bool, bool)``              TypeError (use ``logical_xor``)
  ``arange(..., dtype="bool")``         the numbers cast to bool
  ``random.*`` with a wrong ``dtype``   TypeError
  ====================================  ==================================================

Deliberately not compared (undefined, not a dtype question):

* integer division or ``mod`` by zero (NumPy gives 0 with a warning, torch raises): the
  divisors here are non-zero;
* an integer base with a *negative integer array* exponent: NumPy checks the values and
  raises, torch truncates ``1/x``, MLX returns 0; catching it would need a device sync on
  every ``power`` call (the Python-scalar exponent case is checked: ``test_rule_power``);
* the signs of singular vectors and eigenvectors (compared up to sign);
* ``cholesky`` of a matrix that is not positive definite (MLX does not check): the input
  here is positive definite;
* a float16 array times a Python int too large for float16 (NumPy rounds the scalar to
  float16 first, ``0 * inf = nan``; torch multiplies in higher precision, ``0``);
* uint16/uint32: torch refuses them on conversion (``test_wide_unsigned_agree_where_supported``);
* complex64 is outside :data:`DTYPES`: ordering ops (``max``, ``sort``, ``clip``, ``relu``...)
  and several activations still differ between the backends on complex input.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import backends, dtypes, ops
from ember.backends import _spec
from tests.tolerances import FLOAT32

# log(0), arcsin(2), ... on the sample inputs: NaN/inf are compared, the warnings are noise.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")

DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32")
INSTALLED = [name for name in backends.BACKENDS if backends.is_installed(name)]


def _np(values, dtype):
    return np.asarray(values).astype(dtypes.to_numpy_dtype(dtype))


def _x(d):
    """The main 2x3 input: small non-negative values (valid for uint8; bool: 0/1)."""
    base = np.array([[0, 1, 2], [3, 1, 2]])
    return _np(base % 2 if d == "bool" else base, d)


def _y(d):
    """A second 2x3 operand with no zeros (integer division by zero is undefined)."""
    return _np([[1, 2, 1], [3, 1, 2]], d)


def _sq(d):
    """A 2x2 invertible matrix."""
    return _np([[1, 0], [1, 1]] if d == "bool" else [[2, 1], [1, 3]], d)


def _spd(d):
    """A 2x2 symmetric positive-definite matrix."""
    return _np(np.eye(2) if d == "bool" else [[2, 1], [1, 3]], d)


def t(a):
    return ops.convert_to_tensor(a)


def _i32(values):
    return t(np.asarray(values, np.int32))


# ----------------------------------------------------------------------------- cases
# name -> (function(dtype) -> result, sign_free). Results may be arrays or tuples/lists of
# arrays; ``sign_free`` compares absolute values (singular vectors / eigenvectors).
CASES: dict = {}


def case(name, sign_free=False):
    def register(fn):
        CASES[name] = (fn, sign_free)
        return fn

    return register


def _unary(op, **kwargs):
    return lambda d: op()(t(_x(d)), **kwargs)


UNARY = (
    "negative abs sign sqrt rsqrt square reciprocal exp log log1p expm1 log2 log10 sin cos tan arcsin arccos "
    "arctan sinh cosh tanh arcsinh arccosh arctanh erf erfinv round floor ceil isnan isinf isfinite logical_not "
    "real imag conj stop_gradient ravel transpose sort argsort nonzero zeros_like ones_like"
).split()
for _name in UNARY:
    case(_name)((lambda n: lambda d: getattr(ops, n)(t(_x(d))))(_name))

BINARY = (
    "add subtract multiply divide floor_divide mod power maximum minimum arctan2 equal not_equal less less_equal "
    "greater greater_equal logical_and logical_or logical_xor isclose"
).split()
for _name in BINARY:
    # same dtype; with weak Python int / float scalars on either side; with int8/uint8/float16/bool arrays
    case(_name)((lambda n: lambda d: getattr(ops, n)(t(_x(d)), t(_y(d))))(_name))
    case(_name + "[int]")((lambda n: lambda d: getattr(ops, n)(t(_x(d)), 2))(_name))
    case(_name + "[float]")((lambda n: lambda d: getattr(ops, n)(t(_x(d)), 1.5))(_name))
    case(_name + "[int,x]")((lambda n: lambda d: getattr(ops, n)(2, t(_y(d))))(_name))
    case(_name + "[int300]")((lambda n: lambda d: getattr(ops, n)(t(_x(d)), 300))(_name))
    for _other in ("int8", "uint8", "float16", "bool"):
        case(f"{_name}[{_other}]")((lambda n, o: lambda d: getattr(ops, n)(t(_x(d)), t(_y(o))))(_name, _other))

REDUCTIONS = "sum mean prod max min argmax argmin var std logsumexp all any cumsum cumprod count_nonzero".split()
for _name in REDUCTIONS:
    case(_name)((lambda n: lambda d: getattr(ops, n)(t(_x(d)), axis=1))(_name))
    if _name not in ("cumsum", "cumprod", "count_nonzero"):
        case(_name + "[all]")((lambda n: lambda d: getattr(ops, n)(t(_x(d))))(_name))
    else:
        case(_name + "[None]")((lambda n: lambda d: getattr(ops, n)(t(_x(d)), axis=None))(_name))

case("power[-1]")(lambda d: ops.power(t(_y(d)), -1))
case("clip")(lambda d: ops.clip(t(_x(d)), 1, 2))
case("clip[float]")(lambda d: ops.clip(t(_x(d)), 0.5, 1.5))
case("clip[arrays]")(lambda d: ops.clip(t(_x(d)), t(_y(d)[::-1]), t(_y(d))))
case("clip[int8 bound]")(lambda d: ops.clip(t(_x(d)), t(np.int8(1)), None))
case("clip[float16 bound]")(lambda d: ops.clip(t(_x(d)), None, t(np.array(1.5, np.float16))))
case("clip[bool bounds]")(lambda d: ops.clip(t(_x(d)), False, True))
case("clip[None]")(lambda d: ops.clip(t(_x(d)), None, None))
case("clip[300]")(lambda d: ops.clip(t(_x(d)), None, 300))
case("where")(lambda d: ops.where(t(_x(d)), t(_x(d)), t(_y(d))))
case("where[1 arg]")(lambda d: ops.where(t(_x(d))))
case("where[float]")(lambda d: ops.where(t(_x(d)), t(_x(d)), 1.5))
case("where[int8]")(lambda d: ops.where(t(_x(d)), t(_x(d)), t(_y("int8"))))
case("reshape")(lambda d: ops.reshape(t(_x(d)), (3, 2)))
case("expand_dims")(lambda d: ops.expand_dims(t(_x(d)), 0))
case("squeeze")(lambda d: ops.squeeze(t(_x(d)[:1])))
case("concatenate")(lambda d: ops.concatenate([t(_x(d)), t(_y(d))], axis=1))
case("concatenate[int8]")(lambda d: ops.concatenate([t(_x(d)), t(_y("int8"))], axis=1))
case("stack")(lambda d: ops.stack([t(_x(d)), t(_y(d))]))
case("split")(lambda d: ops.split(t(_x(d)), 3, axis=1))
case("tile")(lambda d: ops.tile(t(_x(d)), 2))
case("repeat")(lambda d: ops.repeat(t(_x(d)), 2, axis=0))
for _mode in ("constant", "reflect", "symmetric", "edge"):
    case(f"pad[{_mode}]")((lambda m: lambda d: ops.pad(t(_x(d)), 1, mode=m))(_mode))
case("flip")(lambda d: ops.flip(t(_x(d)), axis=1))
case("broadcast_to")(lambda d: ops.broadcast_to(t(_x(d)), (2, 2, 3)))
case("moveaxis")(lambda d: ops.moveaxis(t(_x(d)), 0, 1))
case("swapaxes")(lambda d: ops.swapaxes(t(_x(d)), 0, 1))
case("getitem")(lambda d: ops.getitem(t(_x(d)), (slice(None), [0, 2])))
case("getitem[mask]")(lambda d: ops.getitem(t(_x(d)), np.array([[True, False, True], [False, True, True]])))
case("getitem[by array]")(lambda d: ops.getitem(t(np.arange(12).reshape(4, 3)), t(_x(d))))
case("take")(lambda d: ops.take(t(_x(d)), _i32([0, 2]), axis=1))
case("take_along_axis")(lambda d: ops.take_along_axis(t(_x(d)), _i32([[0], [2]]), axis=1))
case("gather")(lambda d: ops.gather(t(_x(d)), _i32([[0, 1], [1, 2]])))
case("scatter")(lambda d: ops.scatter(_i32([[0, 1], [1, 2], [0, 1]]), t(_x(d)[0]), (2, 3)))
case("scatter_update")(lambda d: ops.scatter_update(t(_x(d)), _i32([[0, 1], [1, 2]]), t(_y(d)[0, :2])))
case("scatter_add")(lambda d: ops.scatter_add(t(_x(d)), _i32([[0, 1], [1, 2], [0, 1]]), t(_y(d)[0])))
case("slice")(lambda d: ops.slice(t(_x(d)), (0, 1), (2, 2)))
case("slice_update")(lambda d: ops.slice_update(t(_x(d)), (0, 1), t(_y(d)[:1, :2])))
case("one_hot")(lambda d: ops.one_hot(t(_x(d)), 4))
case("one_hot[dtype]")(lambda d: ops.one_hot(_i32([0, 3]), 4, dtype=d))
case("top_k")(lambda d: ops.top_k(t(_x(d)), 2))
case("segment_sum")(lambda d: ops.segment_sum(t(_x(d).T), _i32([0, 1, 1]), 3))
case("segment_max")(lambda d: ops.segment_max(t(_x(d).T), _i32([0, 1, 1]), 3))
case("matmul")(lambda d: ops.matmul(t(_x(d)), t(_y(d).T)))
case("matmul[float32]")(lambda d: ops.matmul(t(_x(d)), t(_y("float32").T)))
case("dot")(lambda d: ops.dot(t(_x(d)), t(_y(d).T)))
case("tensordot")(lambda d: ops.tensordot(t(_x(d)), t(_y(d)), axes=2))
case("einsum")(lambda d: ops.einsum("ij,kj->ik", t(_x(d)), t(_y(d))))
case("einsum[int8]")(lambda d: ops.einsum("ij,kj->ik", t(_x(d)), t(_y("int8"))))
case("outer")(lambda d: ops.outer(t(_x(d)[0]), t(_y(d)[1])))
case("cast[to]")(lambda d: ops.cast(t(np.array([-1.7, 0.5, 1.0, 300.0], np.float32)), d))
for _target in ("bool", "uint8", "int32", "bfloat16", "float32"):
    case(f"cast[{_target}]")((lambda g: lambda d: ops.cast(t(_x(d)), g))(_target))
case("full_like")(lambda d: ops.full_like(t(_x(d)), 1))
case("full_like[float]")(lambda d: ops.full_like(t(_x(d)), 1.5))
case("full_like[300]")(lambda d: ops.full_like(t(_x(d)), 300))
case("full[dtype]")(lambda d: ops.full((2,), 1, dtype=d))
case("zeros[dtype]")(lambda d: ops.zeros((2,), dtype=d))
case("ones[dtype]")(lambda d: ops.ones((2,), dtype=d))
case("eye[dtype]")(lambda d: ops.eye(2, dtype=d))
case("arange[dtype]")(lambda d: ops.arange(0, 3, dtype=d))
case("linspace[dtype]")(lambda d: ops.linspace(0, 1, 3, dtype=d))
case("convert_to_tensor[dtype]")(lambda d: ops.convert_to_tensor([0, 1, 2], dtype=d))
case("asarray")(lambda d: ops.asarray(_x(d)))
case("dtype/shape/ndim/size")(lambda d: (ops.dtype(t(_x(d))), ops.shape(t(_x(d))), ops.ndim(t(_x(d))),
                                         ops.size(t(_x(d)))))
case("is_array/to_numpy")(lambda d: (ops.is_array(t(_x(d))), str(ops.to_numpy(t(_x(d))).dtype)))

# linalg
for _name in ("solve", "lstsq"):
    case("linalg." + _name)((lambda n: lambda d: getattr(ops.linalg, n)(t(_sq(d)), t(_sq(d))))(_name))
for _name in ("inv", "det", "slogdet", "pinv", "eigh", "eigvalsh", "eigvals", "qr"):
    case("linalg." + _name)((lambda n: lambda d: getattr(ops.linalg, n)(t(_sq(d))))(_name))
case("linalg.cholesky")(lambda d: ops.linalg.cholesky(t(_spd(d))))
case("linalg.eig", sign_free=True)(lambda d: ops.linalg.eig(t(_sq(d))))
case("linalg.svd", sign_free=True)(lambda d: ops.linalg.svd(t(_sq(d))))
case("linalg.svd[s]")(lambda d: ops.linalg.svd(t(_sq(d)), compute_uv=False))
case("linalg.norm")(lambda d: ops.linalg.norm(t(_x(d))))
case("linalg.norm[axis]")(lambda d: ops.linalg.norm(t(_x(d)), axis=1))
case("linalg.norm[ord=1]")(lambda d: ops.linalg.norm(t(_x(d)), ord=1))
case("linalg.norm[fro]")(lambda d: ops.linalg.norm(t(_x(d)), ord="fro"))
case("linalg.norm[inf]")(lambda d: ops.linalg.norm(t(_x(d)[0]), ord=np.inf))
for _name in ("diag", "diagonal", "trace"):
    case("linalg." + _name)((lambda n: lambda d: getattr(ops.linalg, n)(t(_x(d))))(_name))
for _name in ("matmul", "dot"):
    case("linalg." + _name)((lambda n: lambda d: getattr(ops.linalg, n)(t(_x(d)), t(_y(d).T)))(_name))
case("linalg.tensordot")(lambda d: ops.linalg.tensordot(t(_x(d)), t(_y(d)), axes=2))
case("linalg.einsum")(lambda d: ops.linalg.einsum("ij,ij->i", t(_x(d)), t(_y(d))))

# stats
for _name in ("mean", "var", "std", "median"):
    case("stats." + _name)((lambda n: lambda d: getattr(ops.stats, n)(t(_x(d)), axis=1))(_name))
case("stats.median[all]")(lambda d: ops.stats.median(t(_x(d))))
case("stats.percentile")(lambda d: ops.stats.percentile(t(_x(d)), [10, 90], axis=0))
case("stats.quantile")(lambda d: ops.stats.quantile(t(_x(d)), 0.3, axis=1))
case("stats.cov")(lambda d: ops.stats.cov(t(_x(d))))
case("stats.gaussian")(lambda d: ops.stats.gaussian(t(_x(d)), 1, 2))

# nn
ACTIVATIONS = (
    "relu relu6 leaky_relu elu selu gelu silu sigmoid hard_sigmoid softplus softsign tanh lecun_tanh softmax "
    "log_softmax"
).split()
for _name in ACTIVATIONS:
    case("nn." + _name)((lambda n: lambda d: getattr(ops.nn, n)(t(_x(d) * (1 if d == "bool" else 3))))(_name))
case("nn.gelu[exact]")(lambda d: ops.nn.gelu(t(_x(d)), approximate=False))
case("nn.leaky_relu[0.5]")(lambda d: ops.nn.leaky_relu(t(_x(d)), 0.5))
case("nn.dense")(lambda d: ops.nn.dense(t(_x(d).reshape(3, 2)), t(np.resize(_y(d), (2, 2))), t(np.resize(_y(d), (2,)))))
case("nn.moments")(lambda d: ops.nn.moments(t(_x(d)), axes=(1,)))
case("nn.conv")(lambda d: ops.nn.conv(t(_x(d).reshape(1, 3, 2)), t(np.resize(_y(d), (2, 2, 1)))))
case("nn.conv[float32 kernel]")(lambda d: ops.nn.conv(t(_x(d).reshape(1, 3, 2)), t(np.ones((2, 2, 1), np.float32))))
case("nn.conv_transpose")(lambda d: ops.nn.conv_transpose(t(_x(d).reshape(1, 3, 2)), t(np.resize(_y(d), (2, 1, 2)))))
case("nn.max_pool")(lambda d: ops.nn.max_pool(t(_x(d).reshape(1, 3, 2)), 2, padding="same"))
case("nn.avg_pool")(lambda d: ops.nn.avg_pool(t(_x(d).reshape(1, 3, 2)), 2, padding="same"))

# random: dtype arguments and the dtypes of array inputs
for _name in ("uniform", "normal", "truncated_normal"):
    case("random." + _name)((lambda n: lambda d: ops.dtype(getattr(ops.random, n)((2,), dtype=d, seed=1)))(_name))
case("random.randint")(lambda d: ops.dtype(ops.random.randint((2,), 0, 2, dtype=d, seed=1)))
case("random.categorical")(lambda d: ops.dtype(ops.random.categorical(t(np.zeros((1, 3), np.float32)), 2, dtype=d,
                                                                      seed=1)))
case("random.bernoulli")(lambda d: ops.dtype(ops.random.bernoulli((2,), seed=1)))
case("random.dropout")(lambda d: ops.random.dropout(t(_x(d)), 0.0, seed=1))
case("random.dropout[0.5]")(lambda d: (ops.dtype(ops.random.dropout(t(_x(d)), 0.5, seed=1)),))
case("random.shuffle")(lambda d: (ops.dtype(ops.random.shuffle(t(_x(d)), seed=1)), ops.shape(ops.random.shuffle(
    t(_x(d)), seed=1))))
case("random.permutation")(lambda d: ops.dtype(ops.random.permutation(t(_x(d)), seed=1)))

# Ops with no array input whose dtype is swept, or swept elsewhere, and why.
NOT_SWEPT = {
    "core.get_device": "device string, no dtype",
    "core.to_device": "device move; dtype kept (tests/backends/test_devices.py)",
    "nn.lstm": "one floating dtype by contract (tests/ops/test_nn_recurrent.py)",
    "nn.gru": "one floating dtype by contract (tests/ops/test_nn_recurrent.py)",
    "nn.dot_product_attention": "one floating dtype by contract (tests/layers/test_fused_attention.py)",
    "nn.layer_norm": "floating x, dtype kept (tests/layers/test_fused_norm.py)",
    "nn.fused_batch_norm": "floating x, dtype kept (tests/layers/test_fused_norm.py)",
    "random.set_seed": "no array",
}
# spec op -> the case that covers it, where the case name is not the op name
ALIASES = {
    "core.convert_to_tensor": "convert_to_tensor[dtype]", "core.cast": "cast[to]",
    "core.dtype": "dtype/shape/ndim/size",
    "core.shape": "dtype/shape/ndim/size", "core.ndim": "dtype/shape/ndim/size", "core.size": "dtype/shape/ndim/size",
    "core.to_numpy": "is_array/to_numpy", "core.is_array": "is_array/to_numpy", "core.zeros": "zeros[dtype]",
    "core.ones": "ones[dtype]", "core.full": "full[dtype]", "core.eye": "eye[dtype]", "core.arange": "arange[dtype]",
    "core.linspace": "linspace[dtype]",
}


# ----------------------------------------------------------------------- comparison


def _summary(result):
    """(dtype, float64/complex128 values) of an array, recursively for tuples and lists."""
    if isinstance(result, (tuple, list)):
        return tuple(_summary(r) for r in result)
    if ops.is_array(result):
        dtype = ops.dtype(result)
        values = ops.to_numpy(result)
        return dtype, values.astype(np.complex128 if dtype.startswith("complex") else np.float64)
    return result  # a Python value (a dtype name, a shape, a bool)


def _tolerance(dtype):
    if dtype in ("float16", "bfloat16"):
        return 2e-2  # half precision: the libraries round intermediate steps differently
    return 1e-5


def _differences(a, b, sign_free, where=""):
    """Where summaries ``a`` and ``b`` differ (empty list when they agree)."""
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], np.ndarray):
        if not (isinstance(b, tuple) and len(b) == 2 and isinstance(b[1], np.ndarray)):
            return [f"{where}: {a[0]} array vs {b!r}"]
        if a[0] != b[0]:
            return [f"{where}: dtype {a[0]} vs {b[0]}"]
        x, y = a[1], b[1]
        if x.shape != y.shape:
            return [f"{where}: shape {x.shape} vs {y.shape}"]
        if sign_free:
            x, y = np.abs(x), np.abs(y)
        tol = _tolerance(a[0])
        if not np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True):
            return [f"{where}: values {x.ravel()[:8].tolist()} vs {y.ravel()[:8].tolist()}"]
        return []
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return [m for i, (p, q) in enumerate(zip(a, b)) for m in _differences(p, q, sign_free, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def _run(fn, dtype, backend):
    with ember.using_backend(backend):
        try:
            return "ok", _summary(fn(dtype))
        except Exception as error:  # noqa: BLE001  (the exception type is what is compared)
            return "raised", type(error), str(error)


@pytest.mark.parametrize("name", list(CASES))
def test_backends_agree(name):
    if len(INSTALLED) < 2:
        pytest.skip(f"needs two installed backends to compare, installed: {INSTALLED}")
    fn, sign_free = CASES[name]
    problems = []
    for dtype in DTYPES:
        outcomes = {backend: _run(fn, dtype, backend) for backend in INSTALLED}
        first, reference = INSTALLED[0], outcomes[INSTALLED[0]]
        for backend in INSTALLED[1:]:
            other = outcomes[backend]
            if reference[0] == other[0] == "raised":
                if reference[1] is not other[1]:
                    problems.append(f"{dtype}: {first} raised {reference[1].__name__}({reference[2][:80]}), "
                                    f"{backend} raised {other[1].__name__}({other[2][:80]})")
            elif reference[0] != other[0]:
                shown = {b: (o[1] if o[0] == "ok" else f"{o[1].__name__}: {o[2][:80]}") for b, o in
                         ((first, reference), (backend, other))}
                problems.append(f"{dtype}: {first} -> {shown[first]}; {backend} -> {shown[backend]}")
            else:
                problems += [f"{dtype}: {first} vs {backend}{m}" for m in
                             _differences(reference[1], other[1], sign_free)]
    assert not problems, f"{name}: backends disagree:\n" + "\n".join(problems)


WIDE_UNSIGNED = ("uint16", "uint32")
WIDE_UNSIGNED_CASES = [n for n in CASES if n in UNARY or n in BINARY or n in REDUCTIONS or n.startswith(
    ("clip", "where", "segment_", "nn.relu", "cast[", "full_like", "linalg.norm", "stats."))]


def test_wide_unsigned_agree_where_supported():
    """uint16/uint32: NumPy and MLX compute them and must agree; torch has no general
    arithmetic for them, so it refuses them when converting (a TypeError naming the dtype
    and the backend) instead of computing through a cast that could silently wrap."""
    computing = [b for b in INSTALLED if b != "torch"]
    problems = []
    for name in WIDE_UNSIGNED_CASES:
        fn, sign_free = CASES[name]
        for dtype in WIDE_UNSIGNED:
            outcomes = [(b, _run(fn, dtype, b)) for b in computing]
            (first, ref), rest = outcomes[0], outcomes[1:]
            for backend, other in rest:
                if ref[0] == other[0] == "raised":
                    if ref[1] is not other[1]:
                        problems.append(f"{name} {dtype}: {ref[1].__name__} vs {backend} {other[1].__name__}")
                elif ref[0] != other[0]:
                    problems.append(f"{name} {dtype}: {first} {ref[0]} vs {backend} {other[0]}")
                else:
                    problems += [f"{name} {dtype}{m}" for m in _differences(ref[1], other[1], sign_free)]
    assert not problems, "\n".join(problems)
    if "torch" in INSTALLED:
        for dtype in WIDE_UNSIGNED:
            with ember.using_backend("torch"), pytest.raises(TypeError, match=f"{dtype}.*torch"):
                ops.add(_x(dtype), _y(dtype))


def test_every_spec_op_is_swept():
    covered = {name.split("[")[0] for name in CASES}
    missing = []
    for namespace in _spec.NAMESPACES:
        for op in _spec.op_names(namespace):
            key = f"{namespace}.{op}"
            short = op if namespace == "core" else key
            if short in covered or key in NOT_SWEPT or ALIASES.get(key) in CASES:
                continue
            missing.append(key)
    assert not missing, f"spec ops with no dtype-agreement case (add one, or a reason to NOT_SWEPT): {missing}"


# ---------------------------------------------------------------- the chosen rules


def _check(result, expected, dtype):
    assert ops.dtype(result) == dtype, f"dtype {ops.dtype(result)}, expected {dtype}"
    # integers compare exactly; float results are one float32 (or float16: exact here) op from float64
    np.testing.assert_allclose(ops.to_numpy(result).astype(np.float64), np.asarray(expected, np.float64), **FLOAT32)


def test_rule_clip(backend):
    x = np.array([1, 5, 9])
    _check(ops.clip(t(x.astype(np.int32)), 2.5, 7.5), [2.5, 5, 7.5], "float32")  # weak float: int -> floatx
    _check(ops.clip(t(x.astype(np.int32)), 2, 7), [2, 5, 7], "int32")
    _check(ops.clip(t(x.astype(np.int8)), 2, 7), [2, 5, 7], "int8")  # weak int keeps int8
    _check(ops.clip(t(x.astype(np.uint8)), t(np.int8(2)), None), [2, 5, 9], "int16")  # uint8 + int8 -> int16
    _check(ops.clip(t(x.astype(np.int32)), None, t(np.float16(7.5))), [1, 5, 7.5], "float16")
    b = np.array([True, False])
    _check(ops.clip(t(b), 0, 1), [1, 0], "int32")  # bool -> int32 (Keras)
    _check(ops.clip(t(b), False, True), [1, 0], "int32")
    _check(ops.clip(t(b), None, None), [1, 0], "int32")
    _check(ops.clip(t(b), 0.5, 1), [1, 0.5], "float32")
    with pytest.raises(OverflowError):
        ops.clip(t(x.astype(np.int8)), None, 300)


def test_rule_bool_arithmetic_is_int32(backend):
    a, b = t(np.array([True, False, True])), t(np.array([True, True, True]))
    _check(ops.square(a), [1, 0, 1], "int32")
    _check(ops.power(a, b), [1, 0, 1], "int32")
    _check(ops.mod(a, b), [0, 0, 0], "int32")
    _check(ops.floor_divide(a, b), [1, 0, 1], "int32")
    _check(ops.sum(a), 2, "int32")
    _check(ops.cumsum(a), [1, 1, 2], "int32")
    _check(ops.add(a, b), [1, 1, 1], "bool")  # add/multiply of bools stay bool, as NumPy and JAX
    _check(ops.multiply(a, b), [1, 0, 1], "bool")
    _check(ops.power(a, t(np.int8(2))), [1, 0, 1], "int8")  # a bool with a number: result_type
    with pytest.raises(TypeError):
        ops.subtract(a, b)


def test_rule_segment_sum(backend):
    ids = _i32([0, 0, 1])
    _check(ops.segment_sum(t(np.array([True, True, False])), ids, 2), [2, 0], "int32")
    _check(ops.segment_sum(t(np.array([100, 100, 1], np.int8)), _i32([1, 2, 0]), 3), [1, 100, 100], "int8")
    _check(ops.segment_max(t(np.array([True, False, False])), ids, 2), [1, 0], "bool")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_rule_relu_keeps_integers(backend, dtype):
    x = _np([0, 3, 9], dtype)
    _check(ops.nn.relu(t(x)), [0, 3, 9], dtype)
    _check(ops.nn.relu6(t(x)), [0, 3, 6], dtype)
    _check(ops.nn.leaky_relu(t(x)), [0, 3, 9], "float32")
    _check(ops.nn.sigmoid(t(x)), 1 / (1 + np.exp(-np.array([0.0, 3, 9]))), "float32")


def test_rule_relu_of_bool_is_int32(backend):
    b = t(np.array([True, False]))
    _check(ops.nn.relu(b), [1, 0], "int32")
    _check(ops.nn.relu6(b), [1, 0], "int32")
    _check(ops.nn.elu(b), [1, 0], "float32")
    _check(ops.nn.hard_sigmoid(b), [4 / 6, 0.5], "float32")


def test_rule_power_negative_integer_exponent(backend):
    for dtype in ("bool", "uint8", "int32"):
        with pytest.raises(ValueError, match="negative integer powers"):
            ops.power(t(_np([1, 2], dtype)), -1)
    _check(ops.power(t(np.array([1.0, 2.0], np.float32)), -1), [1, 0.5], "float32")
    _check(ops.power(t(np.array([1, 2], np.int32)), 0.5), [1, np.sqrt(2)], "float32")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_rule_out_of_range_python_int_overflows(backend, dtype):
    x = t(_np([1, 2], dtype))
    for fn in (lambda: ops.add(x, 300), lambda: ops.multiply(300, x), lambda: ops.maximum(x, 1000),
               lambda: ops.equal(x, 300), lambda: ops.where(t(np.array([True, False])), x, 300),
               lambda: ops.full_like(x, 300), lambda: ops.full((2,), 300, dtype=dtype)):
        with pytest.raises(OverflowError, match="300|1000"):
            fn()
    if dtype == "uint8":
        with pytest.raises(OverflowError):
            ops.add(x, -1)
    _check(ops.add(x, 100), [101, 102], dtype)
    _check(ops.add(x, 1.5), [2.5, 3.5], "float32")


def test_rule_one_hot_needs_integer_indices(backend):
    with pytest.raises(TypeError, match="one_hot"):
        ops.one_hot(t(np.array([True, False])), 3)
    # Float class ids are cast as Keras casts them (torch's .long(): toward zero); NaN/inf/out of range: no class.
    floats = np.array([0.0, 1.9, 2.7, -0.5, -1.0, 3.0, np.nan, np.inf], np.float32)
    _check(ops.one_hot(t(floats), 3), [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0],
                                       [0, 0, 0]], "float32")
    _check(ops.one_hot(t(np.array([0, 2], np.uint8)), 3), [[1, 0, 0], [0, 0, 1]], "float32")


def test_rule_arange_bool_and_random_dtypes(backend):
    _check(ops.arange(0, 3, dtype="bool"), [0, 1, 1], "bool")
    with pytest.raises(TypeError, match="dtype"):
        ops.random.uniform((2,), dtype="int32", seed=1)
    with pytest.raises(TypeError, match="dtype"):
        ops.random.randint((2,), 0, 2, dtype="float32", seed=1)
