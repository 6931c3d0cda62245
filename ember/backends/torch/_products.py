"""Matrix products of the torch backend (``matmul``, ``dot``, ``tensordot``, ``einsum``, ``outer``).

Shared by ``ember.ops`` and ``ember.ops.linalg``. Operands are promoted to one
dtype first (torch's matmul refuses mixed dtypes). Two dtype gaps of torch are
bridged: bool products (NumPy: logical OR of ANDs) are computed in int32 and
compared with 0, and integer products on CUDA/MPS (no integer GEMM kernels
there) run on the CPU and come back to the input's device.
"""

from __future__ import annotations

import torch

from ember.backends._common import normalize_axis
from ember.backends.torch._base import INTEGER, Tensor, binary_tensors, many


def _run(fn, *ts: Tensor) -> Tensor:
    kind = ts[0].dtype
    try:
        if kind is torch.bool:
            return _run(fn, *[t.to(torch.int32) for t in ts]) != 0
        device = ts[0].device
        if kind in INTEGER and device.type != "cpu":
            return fn(*[t.cpu() for t in ts]).to(device)
        return fn(*ts)
    except RuntimeError as error:
        shapes = [tuple(t.shape) for t in ts]
        name = getattr(fn, "__name__", "product")
        raise ValueError(f"{name}: operands of shapes {shapes} do not fit ({error})") from None


def matmul(x1, x2):
    if type(x1) is not Tensor or type(x2) is not Tensor or x1.dtype is not x2.dtype:
        x1, x2 = binary_tensors(x1, x2)
    if x1.dtype in _FAST:
        try:
            return torch.matmul(x1, x2)
        except RuntimeError as error:  # incl. 0-d operands
            raise ValueError(
                f"matmul: shapes {tuple(x1.shape)} and {tuple(x2.shape)} do not fit a matrix product ({error})"
            ) from None
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: operands must have at least one axis (use multiply for scalars)")
    return _run(torch.matmul, x1, x2)


_FAST = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128))


def _contract(a: Tensor, b: Tensor, axes_a, axes_b) -> Tensor:
    return _run(lambda p, q: torch.tensordot(p, q, dims=(list(axes_a), list(axes_b))), a, b)


def dot(x1, x2):
    a, b = binary_tensors(x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim <= 2 and b.ndim <= 2:
        return _run(torch.matmul, a, b)
    # N-d: sum over the last axis of x1 and the second-to-last of x2 (last if x2 is 1-D).
    return _contract(a, b, [a.ndim - 1], [b.ndim - 2 if b.ndim > 1 else 0])


def tensordot(x1, x2, axes=2):
    a, b = binary_tensors(x1, x2)
    if isinstance(axes, int):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} is out of range for ranks {a.ndim} and {b.ndim}")
        axes_a = list(range(a.ndim - axes, a.ndim))
        axes_b = list(range(axes))
    else:
        try:
            first, second = axes
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, received {axes!r}") from None
        first = [first] if isinstance(first, int) else list(first)
        second = [second] if isinstance(second, int) else list(second)
        if len(first) != len(second):
            raise ValueError(f"tensordot: axes {axes!r} name different numbers of axes")
        axes_a = [normalize_axis(v, a.ndim, "axes") for v in first]
        axes_b = [normalize_axis(v, b.ndim, "axes") for v in second]
    return _contract(a, b, axes_a, axes_b)


def einsum(subscripts, *operands):
    ts = many(list(operands), "operands")
    return _run(lambda *t: torch.einsum(subscripts, *t), *ts)


def outer(x1, x2):
    a, b = many([x1, x2], "x1, x2")
    return a.reshape(-1, 1) * b.reshape(1, -1)
