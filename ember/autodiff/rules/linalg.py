"""VJP rules of products and ``ops.linalg``.

Decompositions follow the standard results PyTorch implements: ``eigh`` and ``svd``
project onto the gauge-invariant part (skew parts divided by eigenvalue/singular
value gaps: degenerate spectra give inf/nan, as in PyTorch); with
``full_matrices=True`` only the first ``k = min(m, n)`` columns of ``u``/rows of ``vh``
carry gradient (the rest are not unique). ``qr`` follows the classic formula for
``m >= n`` and splits ``a = [x | y]`` for ``m < n``; ``mode="complete"`` with
``m > n`` raises. ``det`` of a singular matrix uses the adjugate from an SVD.
``eig``/``eigvals`` (general, complex spectra) have no rule: they raise
``NotImplementedError`` pointing to ``eigh``/``eigvalsh``.
"""

from __future__ import annotations

import string

import numpy as np

from ember import ops
from ember.autodiff.rules import (
    conj,
    expand_reduced,
    fill_zeros,
    index_map,
    needs,
    plain,
    register,
    scatter_flat,
    unbroadcast,
)
from ember.autodiff.rules.reductions import _exclusive_products


def _mT(x):  # noqa: N802
    return ops.swapaxes(x, -1, -2)


def _mH(x):  # noqa: N802
    return conj(ops.swapaxes(x, -1, -2))


def _eye(n, like):
    return np.eye(n, dtype=plain(like).dtype)


# ------------------------------------------------------------------------ products
@register("matmul", "linalg.matmul", reads_out=False)
def matmul(g, out, x1, x2):
    if x1.ndim == 2 and x2.ndim == 2:
        return (ops.matmul(g, _mH(x2)) if needs(0) else None, ops.matmul(_mH(x1), g) if needs(1) else None)
    a = ops.reshape(x1, (1, -1)) if x1.ndim == 1 else x1
    b = ops.reshape(x2, (-1, 1)) if x2.ndim == 1 else x2
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    gm = ops.reshape(g, tuple(batch) + (a.shape[-2], b.shape[-1]))
    da = db = None
    if needs(0):
        da = ops.reshape(unbroadcast(ops.matmul(gm, _mH(b)), a), x1.shape)
    if needs(1):
        db = ops.reshape(unbroadcast(ops.matmul(_mH(a), gm), b), x2.shape)
    return (da, db)


def _tensordot_axes(axes, nd1, nd2):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(nd1 - n, nd1)), list(range(n))
    a, b = axes
    a = [a] if isinstance(a, (int, np.integer)) else list(a)
    b = [b] if isinstance(b, (int, np.integer)) else list(b)
    return [int(i) % nd1 for i in a], [int(i) % nd2 for i in b]


def _tensordot_grads(g, x1, x2, a_axes, b_axes):
    free_a = [i for i in range(x1.ndim) if i not in a_axes]
    free_b = [i for i in range(x2.ndim) if i not in b_axes]
    d1 = d2 = None
    if needs(0):
        raw = ops.tensordot(g, conj(x2), axes=(list(range(len(free_a), g.ndim)), free_b))
        order = free_a + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
        d1 = ops.transpose(raw, [int(i) for i in np.argsort(order)]) if order != sorted(order) else raw
    if needs(1):
        raw = ops.tensordot(conj(x1), g, axes=(free_a, list(range(len(free_a)))))
        order = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + free_b
        d2 = ops.transpose(raw, [int(i) for i in np.argsort(order)]) if order != sorted(order) else raw
    return d1, d2


@register("tensordot", "linalg.tensordot")
def tensordot(g, out, x1, x2, axes=2):
    a_axes, b_axes = _tensordot_axes(axes, x1.ndim, x2.ndim)
    return _tensordot_grads(g, x1, x2, a_axes, b_axes) + (None,)


@register("dot", "linalg.dot")
def dot(g, out, x1, x2):
    if x1.ndim == 0 or x2.ndim == 0:
        return (unbroadcast(ops.multiply(g, conj(x2)), x1) if needs(0) else None,
                unbroadcast(ops.multiply(g, conj(x1)), x2) if needs(1) else None)
    return _tensordot_grads(g, x1, x2, [x1.ndim - 1], [max(x2.ndim - 2, 0)])


@register("outer")
def outer(g, out, x1, x2):
    a = ops.reshape(x1, (-1,))
    b = ops.reshape(x2, (-1,))
    return (ops.reshape(ops.matmul(g, conj(b)), x1.shape) if needs(0) else None,
            ops.reshape(ops.matmul(conj(a), g), x2.shape) if needs(1) else None)


# --------------------------------------------------------------------------- einsum
def _parse_einsum(subscripts: str, shapes: list) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    used = set(c for c in spec if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    widest = 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            widest = max(widest, len(shape) - (len(term) - 3))
    ellipsis = "".join(spare[:widest])
    expanded = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n = len(shape) - (len(term) - 3)
            term = term.replace("...", ellipsis[widest - n:])
        expanded.append(term)
    if arrow:
        output = output.replace("...", ellipsis)
    else:
        counts: dict[str, int] = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ellipsis))
    return expanded, output


@register("einsum", "linalg.einsum")
def einsum(g, out, subscripts, *operands):
    shapes = [tuple(op.shape) for op in operands]
    terms, output = _parse_einsum(subscripts, shapes)
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        for c, n in zip(term, shape):
            sizes[c] = max(sizes.get(c, 1), n)
    spare = [c for c in string.ascii_letters if c not in sizes and c not in output]
    # A size-1 axis broadcast against a longer one gets a private letter of its own.
    renamed = []
    for term, shape in zip(terms, shapes):
        letters = []
        for c, n in zip(term, shape):
            if n == 1 and sizes[c] != 1:
                letters.append(spare.pop())
                sizes[letters[-1]] = 1
            else:
                letters.append(c)
        renamed.append("".join(letters))
    grads = [None]
    for i, (term, operand) in enumerate(zip(renamed, operands)):
        if not needs(i + 1):
            grads.append(None)
            continue
        others = [t for j, t in enumerate(renamed) if j != i]
        other_ops = [conj(o) for j, o in enumerate(operands) if j != i]
        unique = "".join(dict.fromkeys(term))
        available = set(output) | set("".join(others))
        keep = "".join(c for c in unique if c in available)
        grad = ops.einsum(",".join([output] + others) + "->" + keep, g, *other_ops)
        if len(keep) != len(unique):
            # Letters only this operand has: the output is constant along them.
            shape = tuple(sizes[c] if c in available else 1 for c in unique)
            grad = ops.broadcast_to(ops.reshape(grad, shape), tuple(sizes[c] for c in unique))
        if len(unique) != len(term):
            # Repeated letters (a diagonal): place the values on it.
            full = tuple(sizes[c] for c in term)
            grids = np.indices(tuple(sizes[c] for c in unique))
            coords = tuple(grids[unique.index(c)] for c in term)
            flat = np.ravel_multi_index(coords, full)
            grad = scatter_flat(grad, full, flat)
        grads.append(ops.reshape(grad, operand.shape) if tuple(grad.shape) != operand.shape else grad)
    return tuple(grads)


# ------------------------------------------------------------------- dense linalg
@register("linalg.solve")
def solve(g, out, a, b):
    vector = b.ndim == 1
    gm = ops.expand_dims(g, -1) if vector else g
    xm = ops.expand_dims(out, -1) if vector else out
    db = ops.linalg.solve(_mH(a), gm)
    da = None
    if needs(0):
        da = unbroadcast(ops.negative(ops.matmul(db, _mH(xm))), a)
    if needs(1):
        db = ops.getitem(db, (Ellipsis, 0)) if vector else db
        db = unbroadcast(db, b)
    else:
        db = None
    return (da, db)


@register("linalg.inv")
def inv(g, out, x):
    inverse_h = _mH(out)
    return (ops.negative(ops.matmul(ops.matmul(inverse_h, g), inverse_h)),)


def _cofactor(x):
    """``det(x) * inv(x)^T``, also for singular matrices (via the SVD's adjugate)."""
    values = plain(x)
    det = np.linalg.det(values)
    if np.all(det != 0) and np.all(np.isfinite(det)):
        return ops.multiply(ops.expand_dims(ops.expand_dims(ops.linalg.det(x), -1), -1), _mT(ops.linalg.inv(x)))
    u, s, vh = ops.linalg.svd(x, full_matrices=False)
    sign = np.linalg.det(plain(u)) * np.linalg.det(plain(vh))

    others = _exclusive_products(s)  # prod_{j != i} s_j
    adjugate = ops.matmul(ops.multiply(_mT(vh), ops.expand_dims(others, -2)), _mT(u))
    adjugate = ops.multiply(adjugate, np.asarray(sign, dtype=values.dtype)[..., None, None])
    return _mT(adjugate)


@register("linalg.det")
def det(g, out, x):
    return (ops.multiply(ops.expand_dims(ops.expand_dims(g, -1), -1), _cofactor(x)),)


@register("linalg.slogdet")
def slogdet(g, out, x):
    g_log = g[1]
    if g_log is None:
        return (None,)
    return (ops.multiply(ops.expand_dims(ops.expand_dims(g_log, -1), -1), _mT(ops.linalg.inv(x))),)


def _tril_mask(n, like, k=0):
    return np.tril(np.ones((n, n), dtype=plain(like).dtype), k)


@register("linalg.cholesky")
def cholesky(g, out, x):
    lower = out
    n = x.shape[-1]
    p = ops.multiply(ops.matmul(_mT(lower), g), _tril_mask(n, x))
    phi = ops.multiply(ops.add(p, _mT(ops.multiply(p, _tril_mask(n, x, -1)))), 0.5)
    grad = ops.linalg.solve(_mT(lower), phi)  # L^-T phi
    grad = _mT(ops.linalg.solve(_mT(lower), _mT(grad)))  # (L^-T phi) L^-1
    return (grad,)


def _diag_embed(v):
    n = v.shape[-1]
    return ops.multiply(ops.expand_dims(v, -1), _eye(n, v))


def _eigh_grad(gw, gv, w, v):
    n = w.shape[-1]
    inner = None
    if gv is not None:
        vtgv = ops.matmul(_mT(v), gv)
        skew = ops.multiply(ops.subtract(vtgv, _mT(vtgv)), 0.5)
        gaps = ops.subtract(ops.expand_dims(w, -2), ops.expand_dims(w, -1))  # [i, j] = w_j - w_i
        eye = np.eye(n, dtype=bool)
        gaps = ops.where(eye, 1.0, gaps)
        inner = ops.where(eye, 0.0, ops.divide(skew, gaps))
    if gw is not None:
        inner = _diag_embed(gw) if inner is None else ops.add(inner, _diag_embed(gw))
    return ops.matmul(ops.matmul(v, inner), _mT(v))


@register("linalg.eigh")
def eigh(g, out, x):
    if g[0] is None and g[1] is None:
        return (None,)
    return (_eigh_grad(g[0], g[1], out[0], out[1]),)


@register("linalg.eigvalsh")
def eigvalsh(g, out, x):
    _, v = ops.linalg.eigh(x)
    return (_eigh_grad(g, None, out, v),)


def _no_general_eig(op):
    def rule(g, out, x):
        raise NotImplementedError(
            f"ember.ops.{op}: the gradient of a general (non-symmetric) eigendecomposition, whose "
            "eigenvalues and eigenvectors are complex, is not implemented on the NumPy backend; for "
            "symmetric/Hermitian matrices use ember.ops.linalg.eigh / ember.ops.linalg.eigvalsh, "
            "which are differentiable"
        )

    rule.__name__ = op.replace(".", "_")
    return rule


register("linalg.eig")(_no_general_eig("linalg.eig"))
register("linalg.eigvals")(_no_general_eig("linalg.eigvals"))


def _svd_grad(gu, gs, gvh, u, s, vh):
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:
        if gs is None:
            return None
        return ops.matmul(ops.multiply(u, ops.expand_dims(gs, -2)), vh)
    s2 = ops.square(s)
    k = s.shape[-1]
    eye = np.eye(k, dtype=bool)
    gaps = ops.where(eye, 1.0, ops.subtract(ops.expand_dims(s2, -2), ops.expand_dims(s2, -1)))  # s_j^2 - s_i^2
    s_row = ops.expand_dims(s, -2)
    s_col = ops.expand_dims(s, -1)
    v = _mT(vh)
    inner = None
    if gu is not None:
        uhgu = ops.matmul(_mT(u), gu)
        inner = ops.multiply(ops.subtract(uhgu, _mT(uhgu)), s_row)
    if gvh is not None:
        vhgv = ops.matmul(vh, _mT(gvh))
        term = ops.multiply(s_col, ops.subtract(vhgv, _mT(vhgv)))
        inner = term if inner is None else ops.add(inner, term)
    inner = ops.where(eye, 0.0, ops.divide(inner, gaps))
    if gs is not None:
        inner = ops.add(inner, _diag_embed(gs))
    if m > n and gu is not None:
        ga = ops.matmul(u, inner)
        gu_sinv = ops.divide(gu, s_row)
        ga = ops.add(ga, ops.subtract(gu_sinv, ops.matmul(u, ops.matmul(_mT(u), gu_sinv))))
        return ops.matmul(ga, vh)
    if m < n and gvh is not None:
        ga = ops.matmul(inner, vh)
        sinv_gvh = ops.divide(gvh, s_col)
        ga = ops.add(ga, ops.subtract(sinv_gvh, ops.matmul(ops.matmul(sinv_gvh, v), vh)))
        return ops.matmul(u, ga)
    return ops.matmul(ops.matmul(u, inner), vh)


@register("linalg.svd")
def svd(g, out, x, full_matrices=True, compute_uv=True):
    if not compute_uv:
        u, _, vh = ops.linalg.svd(x, full_matrices=False)
        return (_svd_grad(None, g, None, u, out, vh),)
    u, s, vh = out
    gu, gs, gvh = g
    if full_matrices:
        k = s.shape[-1]
        u = ops.getitem(u, (Ellipsis, slice(None), slice(0, k)))
        vh = ops.getitem(vh, (Ellipsis, slice(0, k), slice(None)))
        gu = None if gu is None else ops.getitem(gu, (Ellipsis, slice(None), slice(0, k)))
        gvh = None if gvh is None else ops.getitem(gvh, (Ellipsis, slice(0, k), slice(None)))
    return (_svd_grad(gu, gs, gvh, u, s, vh),)


def _right_solve_rt(x, r):
    """``x @ r^-T`` for an upper-triangular ``r``."""
    return _mT(ops.linalg.solve(r, _mT(x)))


def _qr_grad_tall(q, r, gq, gr):
    n = r.shape[-1]
    qdq = ops.matmul(_mT(q), gq)
    rdr = ops.matmul(r, _mT(gr))
    lower = ops.multiply(ops.add(ops.subtract(qdq, _mT(qdq)), ops.subtract(rdr, _mT(rdr))), _tril_mask(n, r))
    grad_a = ops.matmul(q, ops.add(gr, _right_solve_rt(lower, r)))
    grad_b = _right_solve_rt(ops.subtract(gq, ops.matmul(q, qdq)), r)
    return ops.add(grad_a, grad_b)


@register("linalg.qr")
def qr(g, out, x, mode="reduced"):
    q, r = out
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        raise NotImplementedError(
            "ember.ops.linalg.qr: mode='complete' with more rows than columns is not differentiable "
            "(the extra columns of q are not unique); use mode='reduced'"
        )
    if g[0] is None and g[1] is None:
        return (None,)
    gq = fill_zeros(g[0], q)
    gr = fill_zeros(g[1], r)
    if m >= n:
        return (_qr_grad_tall(q, r, gq, gr),)
    y = ops.getitem(x, (Ellipsis, slice(m, None)))
    u = ops.getitem(r, (Ellipsis, slice(0, m)))
    dv = ops.getitem(gr, (Ellipsis, slice(m, None)))
    gq = ops.add(gq, ops.matmul(y, _mT(dv)))
    dx = _qr_grad_tall(q, u, gq, ops.getitem(gr, (Ellipsis, slice(0, m))))
    dy = ops.matmul(q, dv)
    return (ops.concatenate([dx, dy], axis=-1),)


def _pinv_adjoint(a, p, gp):
    """Cotangent of ``a`` given the cotangent ``gp`` of ``p = pinv(a)`` (constant rank)."""
    m, n = a.shape[-2], a.shape[-1]
    pt, gpt = _mT(p), _mT(gp)
    term1 = ops.negative(ops.matmul(ops.matmul(pt, gp), pt))
    ap = ops.matmul(a, p)
    pa = ops.matmul(p, a)
    term2 = ops.matmul(ops.matmul(ops.subtract(_eye(m, a), ap), gpt), ops.matmul(p, pt))
    term3 = ops.matmul(ops.matmul(pt, p), ops.matmul(gpt, ops.subtract(_eye(n, a), pa)))
    return ops.add(ops.add(term1, term2), term3)


@register("linalg.pinv")
def pinv(g, out, x):
    return (_pinv_adjoint(x, out, g),)


@register("linalg.lstsq")
def lstsq(g, out, a, b, rcond=None):
    p = ops.linalg.pinv(a)
    vector = b.ndim == 1
    da = db = None
    if needs(0):
        gp = ops.outer(g, b) if vector else ops.matmul(g, _mT(b))
        da = _pinv_adjoint(a, p, gp)
    if needs(1):
        db = ops.matmul(_mT(p), g)
    return (da, db, None)


# ---------------------------------------------------------------------------- norms
def _vector_norm_grad(gb, x, nb, ord):
    values = plain(x)
    if ord is None or ord == 2:
        safe = np.where(plain(nb) == 0, 1.0, plain(nb)) if np.any(plain(nb) == 0) else None
        denominator = nb if safe is None else ops.where(plain(nb) == 0, 1.0, nb)
        grad = ops.multiply(gb, ops.divide(x, denominator))
        return grad if safe is None else ops.where(np.broadcast_to(plain(nb) == 0, values.shape), 0.0, grad)
    if ord == 0:
        return ops.zeros_like(values)
    if ord == 1:
        return ops.multiply(gb, np.sign(values))
    if ord in (np.inf, -np.inf):
        magnitude = np.abs(values)
        mask = (magnitude == plain(nb)).astype(values.dtype)
        return mask, ops.multiply(gb, np.sign(values))  # finished by the caller (tie counts)
    p = float(ord)
    magnitude = ops.abs(x)
    scale = ops.divide(ops.power(magnitude, p - 1), ops.power(nb, p - 1))
    grad = ops.multiply(ops.multiply(gb, np.sign(values)), scale)
    zero = values == 0
    return ops.where(zero, 0.0, grad) if zero.any() else grad


def _vector_norm(g, out, x, ord, axis, keepdims):
    gb = expand_reduced(g, x.shape, axis, keepdims)
    nb = expand_reduced(out, x.shape, axis, keepdims)
    result = _vector_norm_grad(gb, x, nb, ord)
    if isinstance(result, tuple):
        mask, signed = result
        axes = tuple(range(x.ndim)) if axis is None else tuple(int(a) % x.ndim for a in np.atleast_1d(axis))
        count = np.maximum(mask.sum(axis=axes, keepdims=True), 1)
        return ops.multiply(signed, mask / count)
    return result


def _matrix_norm(g, out, x, ord, axis, keepdims):
    r, c = (int(a) % x.ndim for a in axis)
    gb = expand_reduced(g, x.shape, axis, keepdims)
    nb = expand_reduced(out, x.shape, axis, keepdims)
    if ord in (None, "fro"):
        return ops.multiply(gb, ops.divide(x, nb))
    moved = ops.moveaxis(x, (r, c), (-2, -1))
    g_moved = ops.moveaxis(gb, (r, c), (-2, -1))
    values = plain(moved)
    if ord in ("nuc", 2, -2):
        u, _, vh = ops.linalg.svd(moved, full_matrices=False)
        if ord == "nuc":
            direction = ops.matmul(u, vh)
        else:
            pick = slice(0, 1) if ord == 2 else slice(-1, None)  # largest / smallest singular value
            u_j = ops.getitem(u, (Ellipsis, slice(None), pick))
            vh_j = ops.getitem(vh, (Ellipsis, pick, slice(None)))
            direction = ops.matmul(u_j, vh_j)
        return ops.moveaxis(ops.multiply(g_moved, direction), (-2, -1), (r, c))
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis = -2 if ord in (1, -1) else -1  # 1: max column sum (sum over rows)
        sums = np.abs(values).sum(axis=sum_axis, keepdims=True)
        extreme = sums.max(axis=-1 if sum_axis == -2 else -2, keepdims=True) if ord in (1, np.inf) else \
            sums.min(axis=-1 if sum_axis == -2 else -2, keepdims=True)
        mask = (sums == extreme).astype(values.dtype)
        mask = mask / mask.sum(axis=(-2, -1), keepdims=True)
        direction = np.sign(values) * mask
        return ops.moveaxis(ops.multiply(g_moved, direction), (-2, -1), (r, c))
    raise NotImplementedError(f"ember.ops.linalg.norm: no gradient for the matrix norm ord={ord!r}")


@register("linalg.norm")
def norm(g, out, x, ord=None, axis=None, keepdims=False):
    if axis is None:
        if ord is None:
            return (_vector_norm(g, out, x, None, None, keepdims),)
        if x.ndim == 1:
            return (_vector_norm(g, out, x, ord, 0, keepdims),)
        return (_matrix_norm(g, out, x, ord, (0, 1), keepdims),)
    if isinstance(axis, (tuple, list)):
        if len(axis) == 1:
            return (_vector_norm(g, out, x, ord, int(axis[0]), keepdims),)
        return (_matrix_norm(g, out, x, ord, tuple(axis), keepdims),)
    return (_vector_norm(g, out, x, ord, int(axis), keepdims),)


# ---------------------------------------------------------------- diagonals, trace
@register("linalg.diag")
def diag(g, out, x, k=0):
    if x.ndim == 1:
        return (ops.linalg.diagonal(g, offset=k),)
    return (scatter_flat(g, x.shape, np.diag(index_map(x.shape), k)),)


@register("linalg.diagonal")
def diagonal(g, out, x, offset=0, axis1=0, axis2=1):
    return (scatter_flat(g, x.shape, np.diagonal(index_map(x.shape), offset, axis1, axis2)),)


@register("linalg.trace")
def trace(g, out, x, offset=0, axis1=0, axis2=1):
    flat = np.diagonal(index_map(x.shape), offset, axis1, axis2)
    spread = ops.broadcast_to(ops.expand_dims(g, -1), flat.shape)
    return (scatter_flat(spread, x.shape, flat),)
