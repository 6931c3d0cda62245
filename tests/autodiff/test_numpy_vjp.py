"""Every VJP rule of the NumPy engine against an independent reference.

The reference is PyTorch's autograd on the same float64 values (or, for a sample of
ops, central finite differences in float64). Each check feeds a random cotangent as
``output_gradients``, so the rules are exercised with a non-trivial ``g``; gradients
must match within 1e-10 relative / 1e-12 absolute where both sides compute the same
formula (looser, with a comment, where the decomposition or summation order differs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember import ops
from ember.autodiff import GradientTape
from ember.autodiff import numpy_engine as _engine  # noqa: F401  (imports the rules)
from ember.autodiff.recording import NOT_DIFFERENTIABLE
from ember.autodiff.rules import RULES
from ember.backends import _spec
from ember.ops.extra.composites import bound_tables, is_composite
from tests.tolerances import FLOAT32_PAIR, FLOAT64

# torch is the reference of (nearly) every check here, its functions in the tables below: a
# core-only install skips the file.
torch = pytest.importorskip("torch")
F = torch.nn.functional

PROPERTY = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EXACT = FLOAT64  # the same formula on both sides, in float64
# Decompositions (LAPACK drivers differ between NumPy and PyTorch) agree to ~1e-9.
DECOMP = {"rtol": 1e-7, "atol": 1e-9}


@pytest.fixture(autouse=True)
def _numpy_backend():
    ember.set_backend("numpy")
    yield


# ----------------------------------------------------------------------- harness
def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _to_torch(value, grad):
    if isinstance(value, np.ndarray):
        t = torch.tensor(value)
        if grad and value.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(value, list):
        return [_to_torch(v, grad) for v in value]
    return value


def _leaves(values):
    out = []
    for v in values:
        if isinstance(v, list):
            out.extend(_leaves(v))
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            out.append(v)
    return out


def _torch_leaves(values):
    out = []
    for v in values:
        if isinstance(v, list):
            out.extend(_torch_leaves(v))
        elif isinstance(v, torch.Tensor) and v.requires_grad:
            out.append(v)
    return out


def ember_grads(fn, inputs, cotangents=None, seed=0, outputs_used=None):
    """Gradients of ``sum(out_i * w_i)`` w.r.t. the float arrays in ``inputs`` (and the outputs)."""
    leaves = _leaves(inputs)
    with GradientTape() as tape:
        tape.watch(leaves)
        out = fn(*inputs)
    outs = _flat(out)
    if outputs_used is not None:
        outs = [outs[i] for i in outputs_used]
    rng = np.random.default_rng(seed)
    if cotangents is None:
        cotangents = [rng.normal(size=np.shape(o)).astype(np.asarray(o).dtype) for o in outs]
    grads = tape.gradient(outs, leaves, output_gradients=cotangents)
    return outs, cotangents, grads


def check(fn, torch_fn, inputs, tol=EXACT, seed=0, outputs_used=None):
    """Ember's gradients equal torch autograd's for ``sum(out * w)`` with random ``w``.

    ``fn`` must look ops up when called (``lambda x: ops.abs(x)``, not ``ops.abs``): a tape
    records the ``ember.ops`` functions bound while it records.
    """
    outs, cotangents, grads = ember_grads(fn, inputs, seed=seed, outputs_used=outputs_used)
    t_inputs = [_to_torch(v, True) for v in inputs]
    t_out = _flat(torch_fn(*t_inputs))
    if outputs_used is not None:
        t_out = [t_out[i] for i in outputs_used]
    for o, t in zip(outs, t_out):
        np.testing.assert_allclose(np.asarray(o), t.detach().cpu().numpy(), **FLOAT64,
                                   err_msg="forward values differ from the torch reference")
    t_leaves = _torch_leaves(t_inputs)
    expected = torch.autograd.grad(t_out, t_leaves, grad_outputs=[torch.tensor(c) for c in cotangents],
                                   allow_unused=True)
    for i, (leaf, got, want) in enumerate(zip(_leaves(inputs), grads, expected)):
        want = np.zeros_like(leaf) if want is None else want.numpy()
        got = np.zeros_like(leaf) if got is None else got
        assert isinstance(got, np.ndarray) and type(got) is np.ndarray, type(got)
        assert got.shape == leaf.shape and got.dtype == leaf.dtype, (i, got.shape, got.dtype, leaf.shape)
        np.testing.assert_allclose(got, want, err_msg=f"gradient of input {i}", **tol)
    return grads


# Central differences in float64, step eps = 1e-6: truncation eps**2 |f'''| / 6 <= 2e-11 (|f'''| <= 100 for
# these ops on [-2, 2]); rounding of up - down u * sum|terms| / eps <= 1e-8 (<= 100 unit-scale terms). 10x:
def check_fd(fn, inputs, eps=1e-6, rtol=1e-6, atol=1e-7, seed=0):
    """Ember's gradients equal central finite differences of ``sum(out * w)`` in float64."""
    outs, cotangents, grads = ember_grads(fn, inputs, seed=seed)
    leaves = _leaves(inputs)

    def objective():
        return sum(float(np.sum(np.asarray(o) * c)) for o, c in zip(_flat(fn(*inputs)), cotangents))

    for leaf, got in zip(leaves, grads):
        numeric = np.zeros_like(leaf)
        for idx in np.ndindex(leaf.shape):
            keep = leaf[idx]
            leaf[idx] = keep + eps
            up = objective()
            leaf[idx] = keep - eps
            down = objective()
            leaf[idx] = keep
            numeric[idx] = (up - down) / (2 * eps)
        got = np.zeros_like(leaf) if got is None else got
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol)


def rand(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


# ------------------------------------------------------------------------- coverage
def test_every_differentiable_op_has_a_rule():
    missing = []
    tables = bound_tables(ember.backends.load("numpy"))  # composites included
    for namespace in _spec.NAMESPACES:
        if namespace == "random":
            continue  # dropout is recorded as a composite (mask * x); the rest carry no gradient
        for name in _spec.op_names(namespace):
            if name in NOT_DIFFERENTIABLE or is_composite(tables[namespace][name]):
                continue  # a composite op (ember.ops.extra.composites) is recorded op by op
            qualified = name if namespace == "core" else f"{namespace}.{name}"
            if qualified not in RULES:
                missing.append(qualified)
    assert not missing, f"ops without a VJP rule: {missing}"


# ------------------------------------------------------------------- elementwise
UNARY = [
    # (ember op, torch op, domain (low, high))
    ("negative", torch.neg, (-3, 3)),
    ("abs", torch.abs, (-3, 3)),
    ("sqrt", torch.sqrt, (0.2, 4)),
    ("rsqrt", torch.rsqrt, (0.2, 4)),
    ("square", torch.square, (-3, 3)),
    ("reciprocal", torch.reciprocal, (0.3, 3)),
    ("exp", torch.exp, (-3, 3)),
    ("log", torch.log, (0.2, 4)),
    ("log1p", torch.log1p, (-0.8, 3)),
    ("expm1", torch.expm1, (-3, 3)),
    ("log2", torch.log2, (0.2, 4)),
    ("log10", torch.log10, (0.2, 4)),
    ("sin", torch.sin, (-3, 3)),
    ("cos", torch.cos, (-3, 3)),
    ("tan", torch.tan, (-1.2, 1.2)),
    ("arcsin", torch.asin, (-0.9, 0.9)),
    ("arccos", torch.acos, (-0.9, 0.9)),
    ("arctan", torch.atan, (-3, 3)),
    ("sinh", torch.sinh, (-3, 3)),
    ("cosh", torch.cosh, (-3, 3)),
    ("tanh", torch.tanh, (-3, 3)),
    ("arcsinh", torch.asinh, (-3, 3)),
    ("arccosh", torch.acosh, (1.2, 4)),
    ("arctanh", torch.atanh, (-0.9, 0.9)),
    ("erf", torch.erf, (-2, 2)),
    ("erfinv", torch.erfinv, (-0.9, 0.9)),
    ("real", lambda x: x, (-3, 3)),
    ("conj", lambda x: x, (-3, 3)),
    ("nn.relu", torch.relu, (-3, 3)),
    ("nn.relu6", F.relu6, (-4, 10)),
    ("nn.leaky_relu", lambda x: F.leaky_relu(x, 0.2), (-3, 3)),
    ("nn.elu", F.elu, (-3, 3)),
    ("nn.selu", F.selu, (-3, 3)),
    ("nn.silu", F.silu, (-5, 5)),
    ("nn.sigmoid", torch.sigmoid, (-5, 5)),
    # F.hardsigmoid's backward uses a float32 1/6; relu6(x + 3) / 6 has the same kinks in float64.
    ("nn.hard_sigmoid", lambda x: F.relu6(x + 3) / 6, (-5, 5)),
    ("nn.softplus", F.softplus, (-5, 5)),
    ("nn.softsign", F.softsign, (-5, 5)),
    ("nn.tanh", torch.tanh, (-3, 3)),
    ("nn.lecun_tanh", lambda x: 1.7159 * torch.tanh(0.666 * x), (-3, 3)),
]


def _op(qualified):
    namespace, _, name = qualified.rpartition(".")
    return getattr(getattr(ops, namespace) if namespace else ops, name)


@pytest.mark.parametrize("name,torch_fn,domain", UNARY, ids=[u[0] for u in UNARY])
@PROPERTY
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), seed=st.integers(0, 2**16))
def test_unary_matches_torch(name, torch_fn, domain, shape, seed):
    x = rand(np.random.default_rng(seed), shape, *domain)
    check(lambda v: _op(name)(v), torch_fn, [x])


@pytest.mark.parametrize("approximate", [True, False])
def test_gelu_matches_torch(approximate):
    x = rand(np.random.default_rng(1), (3, 5), -4, 4)
    check(lambda v: ops.nn.gelu(v, approximate=approximate),
          lambda v: F.gelu(v, approximate="tanh" if approximate else "none"), [x])


def test_abs_and_relu_at_zero_follow_torch():
    x = np.array([-1.0, 0.0, 2.0, 0.0])
    check(lambda *a: ops.abs(*a), torch.abs, [x])
    check(lambda *a: ops.nn.relu(*a), torch.relu, [x])
    check(lambda *a: ops.nn.relu6(*a), F.relu6, [np.array([0.0, 6.0, 3.0, -1.0, 7.0])])
    check(lambda *a: ops.nn.hard_sigmoid(*a), lambda t: F.relu6(t + 3) / 6, [np.array([-3.0, 3.0, 0.0])])
    check(lambda *a: ops.nn.elu(*a), F.elu, [x])


BINARY = [
    ("add", torch.add, (-3, 3), (-3, 3)),
    ("subtract", torch.sub, (-3, 3), (-3, 3)),
    ("multiply", torch.mul, (-3, 3), (-3, 3)),
    ("divide", torch.div, (-3, 3), (0.5, 3)),
    ("mod", torch.remainder, (-5, 5), (0.7, 3)),
    ("power", torch.pow, (0.3, 3), (-2, 2)),
    ("maximum", torch.maximum, (-3, 3), (-3, 3)),
    ("minimum", torch.minimum, (-3, 3), (-3, 3)),
    ("arctan2", torch.atan2, (-3, 3), (-3, 3)),
]


@pytest.mark.parametrize("name,torch_fn,d1,d2", BINARY, ids=[b[0] for b in BINARY])
@PROPERTY
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       seed=st.integers(0, 2**16))
def test_binary_broadcasting_matches_torch(name, torch_fn, d1, d2, shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shapes.input_shapes[0], *d1), rand(rng, shapes.input_shapes[1], *d2)
    check(lambda x, y: _op(name)(x, y), torch_fn, [a, b])


def test_binary_with_python_scalars():
    x = rand(np.random.default_rng(2), (2, 3))
    check(lambda v: ops.multiply(v, 3.0), lambda v: v * 3.0, [x])
    check(lambda v: ops.subtract(2.0, v), lambda v: 2.0 - v, [x])
    check(lambda v: ops.power(ops.abs(v), 2.5), lambda v: v.abs() ** 2.5, [x])
    check(lambda v: ops.power(2.0, v), lambda v: torch.pow(2.0, v), [x])


def test_power_special_cases_follow_torch():
    base = np.array([0.0, 0.0, 2.0, 1.5, 0.0])
    exponent = np.array([0.0, 2.0, 0.0, 3.0, 1.0])
    check(lambda *a: ops.power(*a), torch.pow, [base, exponent])


def test_maximum_minimum_ties_split_half():
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 1.0, 4.0, -1.0])
    check(lambda *a: ops.maximum(*a), torch.maximum, [a, b])
    check(lambda *a: ops.minimum(*a), torch.minimum, [a, b])


def test_clip_scalar_and_array_bounds():
    rng = np.random.default_rng(3)
    x = rand(rng, (3, 4), -3, 3)
    x[0, 0], x[0, 1] = -1.0, 1.0  # exactly on the bounds: torch passes the gradient
    check(lambda v: ops.clip(v, -1.0, 1.0), lambda v: torch.clamp(v, -1.0, 1.0), [x])
    check(lambda v: ops.clip(v, None, 0.5), lambda v: torch.clamp(v, max=0.5), [x])
    lo, hi = rand(rng, (4,), -2, -0.5), rand(rng, (3, 1), 0.5, 2)
    check(lambda *a: ops.clip(*a), lambda v, a, b: torch.clamp(v, a, b), [x, lo, hi])


def test_where_broadcasting():
    rng = np.random.default_rng(4)
    cond = rng.uniform(size=(3, 1)) > 0.5
    a, b = rand(rng, (3, 4)), rand(rng, (4,))
    check(lambda x, y: ops.where(cond, x, y), lambda x, y: torch.where(torch.tensor(cond), x, y), [a, b])


def test_cast_between_floats_and_to_complex():
    x = rand(np.random.default_rng(5), (2, 3))
    x32 = x.astype(np.float32)
    with GradientTape() as tape:
        tape.watch(x32)
        y = ops.sum(ops.multiply(ops.cast(x32, "float64"), 2.0))
    g = tape.gradient(y, x32)
    assert g.dtype == np.float32 and np.allclose(g, 2.0)
    check(lambda v: ops.real(ops.multiply(ops.cast(v, "complex128"), ops.cast(v, "complex128"))),
          lambda v: (v.to(torch.complex128) * v.to(torch.complex128)).real, [x])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.cast(x, "int32"))
    assert tape.gradient(y, x) is None  # an integer result carries no gradient


def test_complex_parts_match_torch():
    rng = np.random.default_rng(6)
    z = rng.normal(size=(3,)) + 1j * rng.normal(size=(3,))
    for fn, tfn in [
        (lambda v: ops.real(ops.multiply(v, v)), lambda v: (v * v).real),
        (lambda v: ops.imag(ops.multiply(v, ops.conj(v))), lambda v: (v * v.conj()).imag),
        (lambda v: ops.abs(ops.exp(v)), lambda v: v.exp().abs()),
        (lambda v: ops.imag(ops.square(v)), lambda v: (v * v).imag),
    ]:
        with GradientTape() as tape:
            tape.watch(z)
            y = ops.sum(fn(z))
        got = tape.gradient(y, z)
        t = torch.tensor(z, requires_grad=True)
        tfn(t).sum().backward()
        np.testing.assert_allclose(got, t.grad.numpy(), **EXACT)


def test_identities_and_imag_of_real():
    x = rand(np.random.default_rng(7), (2, 2))
    check(lambda v: ops.convert_to_tensor(v), lambda v: v, [x])
    check(lambda v: ops.asarray(v), lambda v: v, [x])
    check(lambda v: ops.to_device(v, "cpu"), lambda v: v, [x])
    check(lambda v: ops.add(ops.imag(v), v), lambda v: v, [x])
    a, b = np.array(1.5), np.array(-2.0)
    check(lambda p, q: ops.convert_to_tensor([p, q]), lambda p, q: torch.stack([p, q]), [a, b])


def test_gaussian_matches_torch():
    rng = np.random.default_rng(8)
    x, mean, std = rand(rng, (3, 4)), rand(rng, (4,)), rand(rng, (3, 1), 0.5, 2)

    def reference(v, m, s):
        return torch.exp(-((v - m) ** 2) / (2 * s**2)) / (s * math.sqrt(2 * math.pi))

    check(lambda *a: ops.stats.gaussian(*a), reference, [x, mean, std])


# -------------------------------------------------------------------- reductions
@st.composite
def array_axis(draw, min_dims=0, max_dims=3, min_side=1):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=4))
    ndim = len(shape)
    choices = [st.none()]
    if ndim:
        choices += [st.integers(-ndim, ndim - 1), hnp.valid_tuple_axes(ndim, min_size=1)]
    axis = draw(st.one_of(*choices))
    return shape, axis, draw(st.booleans()), draw(st.integers(0, 2**16))


def _tdims(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(axis) if isinstance(axis, tuple) else (axis,)


REDUCTIONS = [
    ("sum", lambda t, a, k: torch.sum(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("mean", lambda t, a, k: torch.mean(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("stats.mean", lambda t, a, k: torch.mean(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("max", lambda t, a, k: torch.amax(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("min", lambda t, a, k: torch.amin(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("logsumexp", lambda t, a, k: torch.logsumexp(t, dim=_tdims(a, t.ndim), keepdim=k)),
    ("prod", None),
]


def _torch_prod(t, axis, keepdims):
    for a in sorted((d % t.ndim for d in _tdims(axis, t.ndim)), reverse=True):
        t = torch.prod(t, dim=a, keepdim=True)
    if not keepdims:
        t = t.reshape([n for i, n in enumerate(t.shape) if i not in {d % max(t.ndim, 1) for d in _tdims(axis, t.ndim)}])
    return t


@pytest.mark.parametrize("name,torch_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@PROPERTY
@given(case=array_axis())
def test_reductions_match_torch(name, torch_fn, case):
    shape, axis, keepdims, seed = case
    x = rand(np.random.default_rng(seed), shape)
    torch_fn = torch_fn or _torch_prod
    check(lambda v: _op(name)(v, axis=axis, keepdims=keepdims), lambda t: torch_fn(t, axis, keepdims), [x])


@pytest.mark.parametrize("name", ["var", "std", "stats.var", "stats.std"])
@PROPERTY
@given(case=array_axis(min_dims=1, min_side=2), ddof=st.integers(0, 1))
def test_var_std_with_ddof_match_torch(name, case, ddof):
    shape, axis, keepdims, seed = case
    x = rand(np.random.default_rng(seed), shape)
    tfn = torch.var if name.endswith("var") else torch.std
    check(lambda v: _op(name)(v, axis=axis, keepdims=keepdims, ddof=ddof),
          lambda t: tfn(t, dim=_tdims(axis, t.ndim), keepdim=keepdims, correction=ddof), [x])


def test_max_min_ties_split_evenly_like_torch_amax():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    check(lambda v: ops.max(v, axis=1), lambda t: torch.amax(t, dim=1), [x])
    check(lambda v: ops.min(v), lambda t: torch.amin(t), [x])
    check(lambda v: ops.max(v), lambda t: torch.max(t), [x])


def test_prod_with_zeros_is_exact():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]])
    check(lambda v: ops.prod(v, axis=1), lambda t: torch.prod(t, dim=1), [x])
    check(lambda v: ops.prod(v, axis=0, keepdims=True), lambda t: torch.prod(t, dim=0, keepdim=True), [x])
    check(lambda v: ops.prod(v), lambda t: torch.prod(t), [np.array([0.0, 2.0, 3.0, -1.0])])
    check_fd(lambda v: ops.prod(v, axis=(0, 1)), [x.copy()])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_cumprod_match_torch(axis):
    rng = np.random.default_rng(9)
    x = rand(rng, (3, 4))

    def tcum(fn):
        return lambda t: fn(t.reshape(-1), dim=0) if axis is None else fn(t, dim=axis)

    check(lambda v: ops.cumsum(v, axis=axis), tcum(torch.cumsum), [x])
    check(lambda v: ops.cumprod(v, axis=axis), tcum(torch.cumprod), [x])
    x[1, 2] = 0.0
    x[0, 1] = 0.0
    check(lambda v: ops.cumprod(v, axis=axis), tcum(torch.cumprod), [x])


def test_cumprod_with_zeros_finite_differences():
    x = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0]])
    check_fd(lambda v: ops.cumprod(v, axis=1), [x])


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_percentile_median_match_torch(method):
    rng = np.random.default_rng(10)
    x = rng.permutation(24).reshape(4, 6) + rng.uniform(0, 0.5, size=(4, 6))  # distinct values
    q = np.array([0.1, 0.5, 0.85])
    check(lambda v: ops.stats.quantile(v, q, axis=1, method=method),
          lambda t: torch.quantile(t, torch.tensor(q), dim=1, interpolation=method), [x])
    check(lambda v: ops.stats.percentile(v, 30.0, axis=0, keepdims=True, method=method),
          lambda t: torch.quantile(t, 0.3, dim=0, keepdim=True, interpolation=method), [x])
    check(lambda v: ops.stats.quantile(v, 0.4, method=method),
          lambda t: torch.quantile(t.reshape(-1), 0.4, interpolation=method), [x])


def test_median_matches_interpolated_quantile():
    rng = np.random.default_rng(11)
    x = rng.permutation(20).reshape(4, 5) + rng.uniform(0, 0.5, size=(4, 5))
    check(lambda v: ops.stats.median(v, axis=0), lambda t: torch.quantile(t, 0.5, dim=0), [x])
    check(lambda v: ops.stats.median(v), lambda t: torch.quantile(t.reshape(-1), 0.5), [x])
    check(lambda v: ops.stats.median(v, axis=1, keepdims=True),
          lambda t: torch.quantile(t, 0.5, dim=1, keepdim=True), [x])


@pytest.mark.parametrize("rowvar,bias,ddof",
                         [(True, False, None), (False, False, None), (True, True, None), (False, False, 0)])
def test_cov_matches_torch(rowvar, bias, ddof):
    x = rand(np.random.default_rng(12), (3, 6))
    correction = ddof if ddof is not None else (0 if bias else 1)
    check(lambda v: ops.stats.cov(v, rowvar=rowvar, bias=bias, ddof=ddof),
          lambda t: torch.cov(t if rowvar else t.T, correction=correction), [x])
    check(lambda v: ops.stats.cov(v[0]) if False else ops.stats.cov(ops.getitem(v, 0)),
          lambda t: torch.cov(t[0]), [x])


def test_moments_match_torch():
    x = rand(np.random.default_rng(13), (3, 4, 2))
    check(lambda v: ops.nn.moments(v, axes=(0, 2)),
          lambda t: (t.mean(dim=(0, 2)), t.var(dim=(0, 2), correction=0)), [x])
    check(lambda v: ops.nn.moments(v, axes=[1], keepdims=True),
          lambda t: (t.mean(dim=1, keepdim=True), t.var(dim=1, keepdim=True, correction=0)), [x])
    check(lambda v: ops.nn.moments(v, axes=(0,)), lambda t: (t.mean(dim=0), t.var(dim=0, correction=0)), [x],
          outputs_used=[1])


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_log_softmax_match_torch(axis):
    x = rand(np.random.default_rng(14), (3, 5), -5, 5)
    if isinstance(axis, tuple):
        def tsoft(t, log):
            flat = t.reshape(-1)
            out = torch.log_softmax(flat, 0) if log else torch.softmax(flat, 0)
            return out.reshape(t.shape)
    else:
        def tsoft(t, log):
            return torch.log_softmax(t, axis) if log else torch.softmax(t, axis)
    check(lambda v: ops.nn.softmax(v, axis=axis), lambda t: tsoft(t, False), [x])
    check(lambda v: ops.nn.log_softmax(v, axis=axis), lambda t: tsoft(t, True), [x])
    big = x * 300.0  # stable for large logits
    check(lambda v: ops.nn.log_softmax(v, axis=axis), lambda t: tsoft(t, True), [big])


# ------------------------------------------------------------------------ shape ops
@PROPERTY
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3), seed=st.integers(0, 2**16))
def test_shape_ops_match_torch(shape, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape)
    n = x.ndim
    perm = tuple(int(i) for i in rng.permutation(n))
    check(lambda v: ops.reshape(v, (-1,)), lambda t: t.reshape(-1), [x])
    check(lambda v: ops.transpose(v, perm), lambda t: t.permute(perm), [x])
    check(lambda v: ops.transpose(v), lambda t: t.permute(tuple(range(n - 1, -1, -1))), [x])
    check(lambda v: ops.expand_dims(v, -1), lambda t: t.unsqueeze(-1), [x])
    check(lambda v: ops.squeeze(ops.expand_dims(v, 0), 0), lambda t: t, [x])
    check(lambda v: ops.ravel(v), lambda t: t.reshape(-1), [x])
    check(lambda v: ops.flip(v, axis=0), lambda t: t.flip(0), [x])
    check(lambda v: ops.flip(v), lambda t: t.flip(tuple(range(n))), [x])
    check(lambda v: ops.moveaxis(v, 0, -1), lambda t: t.movedim(0, -1), [x])
    check(lambda v: ops.swapaxes(v, 0, -1), lambda t: t.transpose(0, -1), [x])
    check(lambda v: ops.broadcast_to(v, (2,) + shape), lambda t: t.expand((2,) + shape), [x])
    check(lambda v: ops.tile(v, (2,) + (1,) * (n - 1)), lambda t: t.repeat((2,) + (1,) * (n - 1)), [x])
    check(lambda v: ops.tile(v, 2), lambda t: torch.tile(t, (2,)), [x])
    check(lambda v: ops.repeat(v, 2, axis=-1), lambda t: t.repeat_interleave(2, dim=-1), [x])
    check(lambda v: ops.repeat(v, 3), lambda t: t.reshape(-1).repeat_interleave(3), [x])


def test_squeeze_all_and_broadcast_from_ones():
    x = rand(np.random.default_rng(15), (1, 3, 1))
    check(lambda v: ops.squeeze(v), lambda t: t.squeeze(), [x])
    check(lambda v: ops.broadcast_to(v, (2, 3, 4)), lambda t: t.expand(2, 3, 4), [x])


def test_repeat_with_per_element_counts():
    x = rand(np.random.default_rng(16), (3, 2))
    counts = np.array([2, 0, 3])
    check(lambda v: ops.repeat(v, counts, axis=0), lambda t: t.repeat_interleave(torch.tensor(counts), dim=0), [x])


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate_stack_split_match_torch(axis):
    rng = np.random.default_rng(17)
    a, b, c = rand(rng, (2, 3)), rand(rng, (2, 3)), rand(rng, (2, 3))
    if axis is None:
        check(lambda p, q: ops.concatenate([p, q], axis=None),
              lambda p, q: torch.cat([p.reshape(-1), q.reshape(-1)]), [a, b])
        return
    check(lambda p, q, r: ops.concatenate([p, q, r], axis=axis),
          lambda p, q, r: torch.cat([p, q, r], dim=axis), [a, b, c])
    check(lambda p, q: ops.stack([p, q], axis=axis), lambda p, q: torch.stack([p, q], dim=axis), [a, b])
    wide = rand(rng, (4, 6))
    check(lambda v: ops.split(v, 2, axis=axis), lambda t: torch.chunk(t, 2, dim=axis), [wide])
    check(lambda v: ops.split(v, [1, 3], axis=0), lambda t: torch.tensor_split(t, [1, 3], dim=0), [wide])
    check(lambda v: ops.split(v, 2, axis=0), lambda t: torch.chunk(t, 2, dim=0), [wide], outputs_used=[1])


def test_concatenate_with_a_constant_member():
    rng = np.random.default_rng(18)
    a, const = rand(rng, (2, 2)), rand(rng, (1, 2))
    check(lambda p: ops.concatenate([const, p], axis=0), lambda p: torch.cat([torch.tensor(const), p]), [a])


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric", "edge"])
def test_pad_matches_torch_and_finite_differences(mode):
    x = rand(np.random.default_rng(19), (3, 4))
    widths = ((1, 2), (2, 1))
    if mode in ("constant", "reflect"):
        tmode = {"constant": "constant", "reflect": "reflect"}[mode]
        check(lambda v: ops.pad(v, widths, mode=mode),
              lambda t: F.pad(t.unsqueeze(0), (2, 1, 1, 2), mode=tmode).squeeze(0), [x])
    check_fd(lambda v: ops.pad(v, widths, mode=mode), [x.copy()])
    check_fd(lambda v: ops.pad(v, 1, mode=mode), [x.copy()])


# ------------------------------------------------------------------------ indexing
KEYS = [
    (slice(1, None), slice(None, None, 2)),
    (Ellipsis, 1),
    (None, 0, slice(None, None, -1)),
    (slice(0, 3, 2), None, Ellipsis),
    (np.array([0, 2, 0, 0]),),
    (np.array([[1, 1], [0, 2]]), slice(1, 3)),
    (np.array([0, 2, 2]), np.array([1, 1, 3])),
    (-1, slice(None), np.array([0, 0])),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_getitem_matches_torch(key):
    x = rand(np.random.default_rng(20), (3, 4, 2))

    def tkey(k):
        if isinstance(k, tuple):
            return tuple(tkey(e) for e in k)
        if isinstance(k, np.ndarray):
            return torch.tensor(k)
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            raise ValueError
        return k

    if len(key) == 3 and key[0] is None:  # torch has no negative steps: flip instead
        tfn = lambda t: t[None, 0].flip(1)  # noqa: E731
    elif len(key) == 3 and isinstance(key[2], np.ndarray):
        # NumPy puts the broadcast advanced-index axis first when a slice separates them.
        tfn = lambda t: t[-1][:, torch.tensor(key[2])].T  # noqa: E731
    else:
        tk = tkey(key)
        tfn = lambda t: t[tk]  # noqa: E731
    check(lambda v: ops.getitem(v, key), tfn, [x])


def test_getitem_boolean_mask_and_operator_indexing():
    rng = np.random.default_rng(21)
    x = rand(rng, (3, 4))
    mask = x > 0
    check(lambda v: ops.getitem(v, mask), lambda t: t[torch.tensor(mask)], [x])
    rows = np.array([True, False, True])
    check(lambda v: ops.getitem(v, (rows, slice(1, 3))), lambda t: t[torch.tensor(rows), 1:3], [x])
    check(lambda v: ops.multiply(v, 1.0)[np.array([0, 0, 2]), 1], lambda t: t[[0, 0, 2], 1], [x])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_repeated_indices_accumulate(axis):
    x = rand(np.random.default_rng(22), (3, 4))
    idx = np.array([[0, 2], [2, -1]])
    if axis is None:
        tfn = lambda t: t.reshape(-1)[torch.tensor(idx % 12)]  # noqa: E731
    else:
        n = x.shape[axis]
        tfn = lambda t: torch.index_select(t, axis, torch.tensor((idx % n).reshape(-1))).reshape(  # noqa: E731
            x.shape[:axis % 2] + idx.shape + x.shape[axis % 2 + 1:])
    check(lambda v: ops.take(v, idx, axis=axis), tfn, [x])


def test_take_along_axis_gather_and_scatters():
    rng = np.random.default_rng(23)
    x = rand(rng, (3, 4))
    idx = np.array([[0, 0], [3, 1], [2, 2]])
    check(lambda v: ops.take_along_axis(v, idx, axis=1), lambda t: torch.gather(t, 1, torch.tensor(idx)), [x])
    nd = np.array([[0, 1], [2, 3], [0, 1]])  # a repeated index
    check(lambda v: ops.gather(v, nd), lambda t: t[torch.tensor(nd[:, 0]), torch.tensor(nd[:, 1])], [x])
    rows = np.array([[2], [0], [2]])
    check(lambda v: ops.gather(v, rows), lambda t: t[torch.tensor(rows[:, 0])], [x])
    upd = rand(rng, (3,))

    def tscatter_add(t, u):
        flat = torch.tensor(nd[:, 0] * 4 + nd[:, 1])
        return t.reshape(-1).index_add(0, flat, u).reshape(3, 4)

    check(lambda v, u: ops.scatter_add(v, nd, u), tscatter_add, [x, upd])
    check(lambda u: ops.scatter(nd, u, (3, 4)),
          lambda u: tscatter_add(torch.zeros(3, 4, dtype=torch.float64), u), [upd])
    unique = np.array([[0, 1], [2, 3]])
    upd2 = rand(rng, (2,))

    def tupdate(t, u):
        flat = torch.tensor(unique[:, 0] * 4 + unique[:, 1])
        return t.reshape(-1).index_put((flat,), u).reshape(3, 4)

    check(lambda v, u: ops.scatter_update(v, unique, u), tupdate, [x, upd2])


def test_slice_and_slice_update():
    rng = np.random.default_rng(24)
    x, u = rand(rng, (4, 5)), rand(rng, (2, 3))
    check(lambda v: ops.slice(v, (1, 2), (2, 3)), lambda t: t[1:3, 2:5], [x])

    def tupdate(t, w):
        out = t.clone()
        out[1:3, 1:4] = w
        return out

    check(lambda v, w: ops.slice_update(v, (1, 1), w), tupdate, [x, u])


def test_top_k_and_sort_match_torch():
    rng = np.random.default_rng(25)
    x = rng.permutation(24).reshape(2, 3, 4) + rng.uniform(0, 0.5, size=(2, 3, 4))
    check(lambda v: ops.top_k(v, 2), lambda t: torch.topk(t, 2), [x], outputs_used=[0])
    check(lambda v: ops.sort(v, axis=1), lambda t: torch.sort(t, dim=1).values, [x])
    check(lambda v: ops.sort(v), lambda t: torch.sort(t, dim=-1).values, [x])


def test_segment_sum_and_segment_max():
    rng = np.random.default_rng(26)
    data = rand(rng, (5, 3))
    ids = np.array([0, 2, 0, 2, 1])
    tids = torch.tensor(ids)
    check(lambda v: ops.segment_sum(v, ids, num_segments=4),
          lambda t: torch.zeros(4, 3, dtype=t.dtype).index_add(0, tids, t), [data])
    data[2, 1] = data[0, 1]  # a tie inside segment 0
    check(lambda v: ops.segment_max(v, ids, num_segments=3),
          lambda t: torch.zeros(3, 3, dtype=t.dtype).scatter_reduce(0, tids[:, None].expand(5, 3), t, "amax",
                                                                     include_self=False), [data])


# ------------------------------------------------------------------------ products
MATMUL_SHAPES = [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
                 ((2, 1, 3, 4), (3, 4, 2)), ((5, 3), (2, 3, 1))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=[str(s) for s in MATMUL_SHAPES])
@pytest.mark.parametrize("name", ["matmul", "linalg.matmul"])
def test_matmul_matches_torch(shapes, name):
    rng = np.random.default_rng(27)
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    check(lambda x, y: _op(name)(x, y), torch.matmul, [a, b])


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 3, 4), (5, 4, 2)), ((), (3,)),
                                    ((3, 2), ())])
@pytest.mark.parametrize("name", ["dot", "linalg.dot"])
def test_dot_matches_finite_differences_and_torch(shapes, name):
    rng = np.random.default_rng(28)
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    if len(shapes[0]) <= 2 and len(shapes[1]) <= 2 and shapes[0] and shapes[1]:
        check(lambda x, y: _op(name)(x, y), torch.matmul, [a, b])
    check_fd(lambda x, y: _op(name)(x, y), [a, b])


@pytest.mark.parametrize("axes", [2, 1, 0, ([0, 2], [1, 0]), ([1], [2])])
@pytest.mark.parametrize("name", ["tensordot", "linalg.tensordot"])
def test_tensordot_matches_torch(axes, name):
    rng = np.random.default_rng(29)
    a = rand(rng, (2, 3, 4))
    b_shape = {2: (3, 4, 2), 1: (4, 2), 0: (2, 2)}.get(axes) if not isinstance(axes, tuple) else \
        ((4, 2, 5) if axes[0] == [0, 2] else (2, 5, 3))
    b = rand(rng, b_shape)
    check(lambda x, y: _op(name)(x, y, axes=axes), lambda x, y: torch.tensordot(x, y, dims=axes), [a, b])


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij->i", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i", [(2, 3), (3,)]),
    ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]),
    ("ijk,jl->kil", [(2, 3, 4), (3, 2)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
@pytest.mark.parametrize("name", ["einsum", "linalg.einsum"])
def test_einsum_matches_torch(subscripts, shapes, name):
    rng = np.random.default_rng(30)
    operands = [rand(rng, s) for s in shapes]
    check(lambda *xs: _op(name)(subscripts, *xs), lambda *xs: torch.einsum(subscripts, *xs), operands)


def test_outer_flattens_its_inputs():
    rng = np.random.default_rng(31)
    a, b = rand(rng, (2, 2)), rand(rng, (3,))
    check(lambda *a: ops.outer(*a), lambda x, y: torch.outer(x.reshape(-1), y.reshape(-1)), [a, b])


# ------------------------------------------------------------------ convolutions
def _torch_conv(x, k, strides, padding, dilation, groups, n, channels_first=False):
    """torch reference for ember's conv (channels_last, TF "same" placement)."""
    if not channels_first:
        x = x.movedim(-1, 1)
    w = k.permute(*range(n, n + 2)[::-1], *range(n))  # (*k, in/g, out) -> (out, in/g, *k)
    if padding == "same":
        pads = []
        for j in reversed(range(n)):
            size, kk = x.shape[2 + j], k.shape[j]
            eff = (kk - 1) * dilation[j] + 1
            out = -(-size // strides[j])
            total = max((out - 1) * strides[j] + eff - size, 0)
            pads += [total // 2, total - total // 2]
        x = F.pad(x, pads)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    y = conv(x, w, stride=strides, dilation=dilation, groups=groups)
    return y if channels_first else y.movedim(1, -1)


CONVS = [
    # (input spatial, kernel spatial, in, out, groups, strides, padding, dilation)
    ((7,), (3,), 2, 3, 1, (1,), "valid", (1,)),
    ((8,), (3,), 2, 4, 2, (2,), "same", (1,)),
    ((6, 5), (3, 2), 3, 2, 1, (1, 1), "valid", (1, 1)),
    ((7, 6), (3, 3), 2, 3, 1, (2, 2), "same", (1, 1)),
    ((8, 7), (2, 3), 2, 2, 1, (2, 1), "same", (1, 2)),
    ((9, 8), (3, 3), 4, 6, 2, (2, 3), "valid", (2, 1)),
    ((6, 6), (4, 4), 1, 2, 1, (3, 3), "same", (1, 1)),
    ((4, 5, 4), (2, 2, 2), 2, 2, 1, (1, 2, 1), "same", (1, 1, 1)),
]


@pytest.mark.parametrize("case", CONVS, ids=[str(i) for i in range(len(CONVS))])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_conv_matches_torch(case, data_format):
    spatial, ksize, cin, cout, groups, strides, padding, dilation = case
    n = len(spatial)
    rng = np.random.default_rng(32)
    shape = (2,) + spatial + (cin,) if data_format == "channels_last" else (2, cin) + spatial
    x, k = rand(rng, shape), rand(rng, ksize + (cin // groups, cout))
    first = data_format == "channels_first"
    check(lambda a, b: ops.nn.conv(a, b, strides=strides, padding=padding, data_format=data_format,
                                   dilation_rate=dilation),
          lambda a, b: _torch_conv(a, b, strides, padding, dilation, groups, n, first), [x, k])


TRANSPOSES = [
    # (input spatial, kernel spatial, in, out, strides, padding, output_padding, dilation)
    ((4,), (3,), 2, 3, (2,), "valid", None, (1,)),
    ((3, 4), (3, 2), 2, 3, (2, 1), "valid", None, (1, 1)),
    ((3, 3), (2, 2), 3, 2, (1, 1), "valid", None, (2, 2)),
]


@pytest.mark.parametrize("case", TRANSPOSES, ids=[str(i) for i in range(len(TRANSPOSES))])
def test_conv_transpose_valid_matches_torch(case):
    spatial, ksize, cin, cout, strides, padding, output_padding, dilation = case
    n = len(spatial)
    rng = np.random.default_rng(33)
    x, k = rand(rng, (2,) + spatial + (cin,)), rand(rng, ksize + (cout, cin))

    def reference(a, b):
        w = b.permute(n + 1, n, *range(n))  # (*k, out, in) -> (in, out, *k)
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d}[n]
        return fn(a.movedim(-1, 1), w, stride=strides, dilation=dilation).movedim(1, -1)

    check(lambda a, b: ops.nn.conv_transpose(a, b, strides=strides, padding=padding, dilation_rate=dilation),
          reference, [x, k])


@pytest.mark.parametrize("strides,padding,output_padding", [((2, 2), "same", None), ((2, 1), "same", (1, 0)),
                                                            ((1, 1), "same", None), ((2, 2), "valid", (1, 1))])
def test_conv_transpose_same_finite_differences(strides, padding, output_padding):
    rng = np.random.default_rng(34)
    x, k = rand(rng, (1, 3, 3, 2)), rand(rng, (3, 2, 2, 2))
    check_fd(lambda a, b: ops.nn.conv_transpose(a, b, strides=strides, padding=padding,
                                                output_padding=output_padding), [x, k])
    check_fd(lambda a, b: ops.nn.conv_transpose(ops.moveaxis(a, -1, 1), b, strides=strides, padding=padding,
                                                output_padding=output_padding, data_format="channels_first"), [x, k])


@pytest.mark.parametrize("pool,strides,padding", [((2, 2), None, "valid"), ((3, 3), (2, 2), "valid"),
                                                  ((3, 2), (2, 2), "same"), ((2, 2), (1, 1), "same")])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_pools_match_torch(pool, strides, padding, data_format):
    rng = np.random.default_rng(35)
    first = data_format == "channels_first"
    x = rand(rng, (2, 3, 5, 6) if first else (2, 5, 6, 3))
    st_ = strides or pool

    def pads(t):
        out = []
        for j in (1, 0):
            size = t.shape[2 + j]
            o = -(-size // st_[j])
            total = max((o - 1) * st_[j] + pool[j] - size, 0) if padding == "same" else 0
            out += [total // 2, total - total // 2]
        return out

    def tmax(t):
        t = t if first else t.movedim(-1, 1)
        t = F.pad(t, pads(t), value=-math.inf)
        y = F.max_pool2d(t, pool, st_)
        return y if first else y.movedim(1, -1)

    def tavg(t):
        t = t if first else t.movedim(-1, 1)
        p = pads(t)
        sums = F.avg_pool2d(F.pad(t, p), pool, st_, divisor_override=1)
        counts = F.avg_pool2d(F.pad(torch.ones_like(t), p), pool, st_, divisor_override=1)
        y = sums / counts
        return y if first else y.movedim(1, -1)

    kwargs = {"strides": strides, "padding": padding, "data_format": data_format}
    check(lambda v: ops.nn.max_pool(v, pool, **kwargs), tmax, [x])
    check(lambda v: ops.nn.avg_pool(v, pool, **kwargs), tavg, [x])


def test_max_pool_1d_ties_go_to_the_first_maximum():
    x = np.array([[[1.0], [3.0], [3.0], [2.0], [2.0], [0.0]]])
    check(lambda v: ops.nn.max_pool(v, 2, strides=1),
          lambda t: F.max_pool1d(t.movedim(-1, 1), 2, 1).movedim(1, -1), [x])


# --------------------------------------------------------------------------- linalg
def _spd(rng, n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_inv_solve_det_slogdet_match_torch():
    rng = np.random.default_rng(36)
    a = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    b, bv = rng.normal(size=(2, 3, 2)), rng.normal(size=(3,))
    check(lambda *a: ops.linalg.inv(*a), torch.linalg.inv, [a])
    check(lambda *a: ops.linalg.solve(*a), torch.linalg.solve, [a, b])
    check(lambda *a: ops.linalg.solve(*a), torch.linalg.solve, [a[0], bv])
    check(lambda *a: ops.linalg.det(*a), torch.linalg.det, [a])
    check(lambda *a: ops.linalg.slogdet(*a), torch.linalg.slogdet, [a], outputs_used=[1])


def test_det_of_a_singular_matrix_uses_the_adjugate():
    # The derivative of det is the cofactor matrix, non-zero at a rank n-1 matrix
    # (torch returns zeros there): finite differences are the reference.
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    check_fd(lambda m: ops.linalg.det(m), [a])
    check_fd(lambda m: ops.linalg.det(m), [np.stack([a, a.T + np.eye(3)])])


def test_cholesky_eigh_eigvalsh_match_torch():
    rng = np.random.default_rng(37)
    a = _spd(rng, 4, (2,))
    check(lambda *a: ops.linalg.cholesky(*a), torch.linalg.cholesky, [a], tol=DECOMP)
    check(lambda *a: ops.linalg.eigvalsh(*a), torch.linalg.eigvalsh, [a], tol=DECOMP)
    weights = rng.normal(size=(4, 4))

    def loss(w, v, backend):  # invariant to each eigenvector's sign
        return (w * w, (v * v) * (weights if backend == "e" else torch.tensor(weights)))

    check(lambda m: loss(*ops.linalg.eigh(m), "e"), lambda m: loss(*torch.linalg.eigh(m), "t"), [a], tol=DECOMP)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_torch(shape, full_matrices):
    rng = np.random.default_rng(38)
    a = rng.normal(size=shape)
    k = min(shape[-2:])
    wu, wv = rng.normal(size=shape[:-1] + (k,)), rng.normal(size=shape[:-2] + (k, shape[-1]))

    def loss(u, s, vh, lib):
        u = u[..., :, :k]
        vh = vh[..., :k, :]
        tw = (lambda z: z) if lib == "e" else torch.tensor
        return (s, (u * u) * tw(wu), (vh * vh) * tw(wv), u @ vh)

    def ember_loss(m):
        u, s, vh = ops.linalg.svd(m, full_matrices=full_matrices)
        return loss(ops.getitem(u, (Ellipsis, slice(None), slice(0, k))), s,
                    ops.getitem(vh, (Ellipsis, slice(0, k), slice(None))), "e")

    check(ember_loss, lambda m: loss(*torch.linalg.svd(m, full_matrices=full_matrices), "t"), [a], tol=DECOMP)
    check(lambda m: ops.linalg.svd(m, compute_uv=False), torch.linalg.svdvals, [a], tol=DECOMP)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2)])
def test_qr_matches_torch(shape):
    a = np.random.default_rng(39).normal(size=shape)
    check(lambda *a: ops.linalg.qr(*a), torch.linalg.qr, [a], tol=DECOMP)
    check(lambda m: ops.linalg.qr(m), torch.linalg.qr, [a], tol=DECOMP, outputs_used=[1])
    if shape[-2] <= shape[-1]:
        check(lambda m: ops.linalg.qr(m, mode="complete"), lambda m: torch.linalg.qr(m, mode="complete"), [a],
              tol=DECOMP)


def test_qr_complete_tall_is_not_differentiable():
    a = np.random.default_rng(40).normal(size=(4, 2))
    with GradientTape() as tape:
        tape.watch(a)
        q, r = ops.linalg.qr(a, mode="complete")
        y = ops.sum(q)
    with pytest.raises(NotImplementedError, match="mode='complete'"):
        tape.gradient(y, a)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_pinv_lstsq_match_torch(shape):
    rng = np.random.default_rng(41)
    a = rng.normal(size=shape)
    check(lambda *a: ops.linalg.pinv(*a), torch.linalg.pinv, [a], tol=DECOMP)
    if shape[0] >= shape[1]:
        b, bv = rng.normal(size=(shape[0], 2)), rng.normal(size=(shape[0],))
        check(lambda *a: ops.linalg.lstsq(*a), lambda m, y: torch.linalg.lstsq(m, y).solution, [a, b], tol=DECOMP)
        check(lambda *a: ops.linalg.lstsq(*a), lambda m, y: torch.linalg.lstsq(m, y[:, None]).solution[:, 0],
              [a, bv], tol=DECOMP)


VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=[str(o) for o in VECTOR_ORDS])
def test_vector_norms_match_torch(ord):
    rng = np.random.default_rng(42)
    x = rand(rng, (3, 5), -2, 2)
    tord = 2 if ord is None else ord
    check(lambda v: ops.linalg.norm(v, ord=ord, axis=1), lambda t: torch.linalg.vector_norm(t, tord, dim=1), [x])
    check(lambda v: ops.linalg.norm(v, ord=ord, axis=0, keepdims=True),
          lambda t: torch.linalg.vector_norm(t, tord, dim=0, keepdim=True), [x])
    check(lambda v: ops.linalg.norm(ops.getitem(v, 0), ord=ord), lambda t: torch.linalg.vector_norm(t[0], tord), [x])
    if ord is None:
        check(lambda v: ops.linalg.norm(v), lambda t: torch.linalg.vector_norm(t), [x])


def test_vector_inf_norm_ties_split_like_torch():
    x = np.array([3.0, -3.0, 1.0])
    check(lambda v: ops.linalg.norm(v, ord=np.inf), lambda t: torch.linalg.vector_norm(t, math.inf), [x])


MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=[str(o) for o in MATRIX_ORDS])
def test_matrix_norms_match_torch(ord):
    rng = np.random.default_rng(43)
    x = rand(rng, (2, 3, 4))
    tol = DECOMP if ord in ("nuc", 2, -2) else EXACT
    check(lambda v: ops.linalg.norm(v, ord=ord, axis=(1, 2)),
          lambda t: torch.linalg.matrix_norm(t, ord, dim=(1, 2)), [x], tol=tol)
    check(lambda v: ops.linalg.norm(v, ord=ord, axis=(2, 0), keepdims=True),
          lambda t: torch.linalg.matrix_norm(t, ord, dim=(2, 0), keepdim=True), [x], tol=tol)
    check(lambda v: ops.linalg.norm(ops.getitem(v, 0), ord=ord), lambda t: torch.linalg.matrix_norm(t[0], ord), [x],
          tol=tol)


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_diag_matches_torch(k):
    rng = np.random.default_rng(44)
    v, m = rand(rng, (3,)), rand(rng, (3, 4))
    check(lambda a: ops.linalg.diag(a, k=k), lambda a: torch.diag(a, k), [v])
    check(lambda a: ops.linalg.diag(a, k=k), lambda a: torch.diag(a, k), [m])


def test_diagonal_trace_match_torch():
    t3 = rand(np.random.default_rng(44), (2, 3, 3))
    check(lambda a: ops.linalg.diagonal(a, offset=1, axis1=1, axis2=2),
          lambda a: torch.diagonal(a, 1, 1, 2), [t3])
    check(lambda a: ops.linalg.trace(a), lambda a: torch.diagonal(a, 0, 0, 1).sum(-1), [t3])
    check(lambda a: ops.linalg.trace(a, offset=-1, axis1=1, axis2=2),
          lambda a: torch.diagonal(a, -1, 1, 2).sum(-1), [t3])


@pytest.mark.parametrize("op", ["linalg.eig", "linalg.eigvals"])
def test_general_eig_raises_naming_eigh(op):
    a = np.random.default_rng(45).normal(size=(3, 3))
    with GradientTape() as tape:
        tape.watch(a)
        out = _op(op)(a)
        y = ops.sum(ops.real(out[0] if isinstance(out, tuple) else out))
    with pytest.raises(NotImplementedError, match="eigh"):
        tape.gradient(y, a)


# --------------------------------------------------------------- dtype and sanity
def test_float32_gradients_keep_float32():
    rng = np.random.default_rng(46)
    x = rand(rng, (4, 3)).astype(np.float32)
    w = rand(rng, (3, 2)).astype(np.float32)
    with GradientTape() as tape:
        tape.watch([x, w])
        y = ops.sum(ops.nn.softmax(ops.matmul(x, w)) * 3.0)
    gx, gw = tape.gradient(y, [x, w])
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (torch.softmax(xt @ wt, -1) * 3.0).sum().backward()
    np.testing.assert_allclose(gx, xt.grad.numpy(), **FLOAT32_PAIR)  # torch's float32 autograd
    np.testing.assert_allclose(gw, wt.grad.numpy(), **FLOAT32_PAIR)


def test_dropout_composite_gradient_is_the_mask():
    x = np.ones((4, 5))
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.random.dropout(x, 0.5, seed=3)
        total = ops.sum(y)
    g = tape.gradient(total, x)
    np.testing.assert_array_equal(g, np.asarray(y))  # mask / (1 - rate) where kept, 0 elsewhere


def test_a_finite_difference_sample():
    rng = np.random.default_rng(47)
    x = rand(rng, (3, 4))
    check_fd(lambda v: ops.logsumexp(ops.multiply(v, v), axis=1), [x.copy()])
    check_fd(lambda v: ops.nn.log_softmax(ops.sin(v)), [x.copy()])
    check_fd(lambda v: ops.linalg.norm(v, ord="nuc"), [x.copy()])
    check_fd(lambda v: ops.einsum("ii->i", ops.getitem(v, (slice(0, 3), slice(0, 3)))), [x.copy()])
    check_fd(lambda v: ops.std(v, axis=0, ddof=1), [x.copy()])
    check_fd(lambda v: ops.stats.quantile(v, 0.3, axis=1), [x.copy()])
