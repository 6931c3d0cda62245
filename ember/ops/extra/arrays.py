"""NumPy-compatible array manipulation, products and binning of ``keras.ops``, built from protocol ops.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.triu(ops.ones((2, 2)))).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops

__all__ = [
    "append", "array_split", "hsplit", "vsplit", "dsplit", "hstack", "vstack", "dstack", "diagflat",
    "fliplr", "flipud", "meshgrid", "roll", "rot90", "tri", "tril", "triu", "unstack", "vander", "diff",
    "trapezoid", "kron", "inner", "vdot", "cross", "correlate", "corrcoef", "searchsorted", "digitize",
    "bincount", "histogram", "isin",
]


def _tensor(x: Any) -> Any:
    return x if ops.is_array(x) else ops.convert_to_tensor(x)


def _axis(axis: int, rank: int, op: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for an array of rank {rank}")
    return axis % rank


def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` along ``axis`` (both flattened when ``axis`` is None).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.append([[1, 2]], [3])).tolist()
        [1, 2, 3]
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    if axis is None:
        return ops.concatenate([ops.ravel(x1), ops.ravel(x2)], axis=0)
    return ops.concatenate([x1, x2], axis=axis)


def array_split(x, indices_or_sections, axis=0):
    """Like ``ops.split``, but ``n`` sections need not divide the axis (the first ones get one more).

    Example:
        >>> from ember import ops
        >>> [ops.to_numpy(part).tolist() for part in ops.array_split(ops.arange(5), 3)]
        [[0, 1], [2, 3], [4]]
    """
    x = _tensor(x)
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise ValueError(f"array_split: the number of sections must be positive, received {sections}")
        length = ops.shape(x)[_axis(axis, ops.ndim(x), "array_split")]
        size, extra = divmod(length, sections)
        bounds, total = [], 0
        for i in range(sections - 1):
            total += size + (1 if i < extra else 0)
            bounds.append(total)
        return ops.split(x, bounds, axis=axis)
    return ops.split(x, list(indices_or_sections), axis=axis)


def hsplit(x, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays).

    Example:
        >>> from ember import ops
        >>> [ops.shape(part) for part in ops.hsplit(ops.ones((2, 4)), 2)]
        [(2, 2), (2, 2)]
    """
    x = _tensor(x)
    return ops.split(x, indices_or_sections, axis=1 if ops.ndim(x) > 1 else 0)


def vsplit(x, indices_or_sections):
    """Split along axis 0.

    Example:
        >>> from ember import ops
        >>> [ops.shape(part) for part in ops.vsplit(ops.ones((4, 2)), 2)]
        [(2, 2), (2, 2)]
    """
    return ops.split(_tensor(x), indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    """Split along axis 2 (arrays of rank >= 3).

    Example:
        >>> from ember import ops
        >>> [ops.shape(part) for part in ops.dsplit(ops.ones((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    x = _tensor(x)
    if ops.ndim(x) < 3:
        raise ValueError(f"dsplit: expected an array of rank >= 3, received shape {ops.shape(x)}")
    return ops.split(x, indices_or_sections, axis=2)


def _at_least(x, rank):
    x = _tensor(x)
    shape = ops.shape(x)
    if len(shape) >= rank:
        return x
    if rank == 2:
        return ops.reshape(x, (1,) + shape if len(shape) == 1 else (1, 1))
    padded = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    return ops.reshape(x, padded)


def hstack(xs):
    """Concatenate along axis 1 (axis 0 for 1-D arrays).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hstack([[1, 2], [3]])).tolist()
        [1, 2, 3]
    """
    xs = [_tensor(x) for x in xs]
    return ops.concatenate(xs, axis=0 if ops.ndim(xs[0]) == 1 else 1)


def vstack(xs):
    """Concatenate along axis 0, 1-D arrays as rows.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.vstack([[1, 2], [3, 4]])).tolist()
        [[1, 2], [3, 4]]
    """
    return ops.concatenate([_at_least(x, 2) for x in xs], axis=0)


def dstack(xs):
    """Concatenate along axis 2, arrays raised to rank 3 first (NumPy's rules).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.dstack([[1, 2], [3, 4]])).tolist()
        [[[1, 3], [2, 4]]]
    """
    return ops.concatenate([_at_least(x, 3) for x in xs], axis=2)


def diagflat(x, k=0):
    """2-D array with the flattened ``x`` on diagonal ``k``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.diagflat([1.0, 2.0])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    return ops.linalg.diag(ops.ravel(_tensor(x)), k=k)


def fliplr(x):
    """Reverse axis 1.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.fliplr(ops.convert_to_tensor([[1, 2], [3, 4]]))).tolist()
        [[2, 1], [4, 3]]
    """
    return ops.flip(x, axis=1)


def flipud(x):
    """Reverse axis 0.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.flipud(ops.convert_to_tensor([[1, 2], [3, 4]]))).tolist()
        [[3, 4], [1, 2]]
    """
    return ops.flip(x, axis=0)


def meshgrid(*x, indexing="xy"):
    """Coordinate arrays from 1-D vectors (``indexing`` "xy" or "ij", as NumPy).

    Raises:
        ValueError: an ``indexing`` other than "xy" or "ij".

    Example:
        >>> from ember import ops
        >>> xs, ys = ops.meshgrid(ops.arange(3), ops.arange(2))
        >>> ops.to_numpy(xs).tolist(), ops.to_numpy(ys).tolist()
        ([[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [1, 1, 1]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', received {indexing!r}")
    vectors = [ops.ravel(_tensor(v)) for v in x]
    sizes = [ops.shape(v)[0] for v in vectors]
    if indexing == "xy" and len(vectors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, v in enumerate(vectors):
        position = i
        if indexing == "xy" and len(vectors) >= 2 and i < 2:
            position = 1 - i
        shape = [1] * len(vectors)
        shape[position] = ops.shape(v)[0]
        grids.append(ops.broadcast_to(ops.reshape(v, tuple(shape)), tuple(sizes)))
    return grids


def roll(x, shift, axis=None):
    """Elements shifted by ``shift`` along ``axis`` (cyclically; flattened when ``axis`` is None).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.roll(ops.arange(4), 1)).tolist()
        [3, 0, 1, 2]
    """
    x = _tensor(x)
    if axis is None:
        return ops.reshape(roll(ops.ravel(x), shift, 0), ops.shape(x))
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    for s, a in zip(shifts, axes):
        length = ops.shape(x)[_axis(a, ops.ndim(x), "roll")]
        if length:
            index = ops.mod(ops.subtract(ops.arange(length), s), length)
            x = ops.take(x, index, axis=a)
    return x


def rot90(array, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first towards the second).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.rot90(ops.convert_to_tensor([[1, 2], [3, 4]]))).tolist()
        [[2, 4], [1, 3]]
    """
    array = _tensor(array)
    rank = ops.ndim(array)
    first, second = (_axis(a, rank, "rot90") for a in axes)
    if first == second:
        raise ValueError(f"rot90: axes must be different, received {axes}")
    k %= 4
    if k == 0:
        return array
    if k == 2:
        return ops.flip(ops.flip(array, axis=first), axis=second)
    order = list(range(rank))
    order[first], order[second] = order[second], order[first]
    if k == 1:
        return ops.transpose(ops.flip(array, axis=second), order)
    return ops.flip(ops.transpose(array, order), axis=second)


def _triangle_mask(rows, cols, k):
    return ops.greater_equal(ops.add(ops.expand_dims(ops.arange(rows), 1), k), ops.expand_dims(ops.arange(cols), 0))


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below diagonal ``k`` of an ``N x M`` array.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.tri(2, 3)).tolist()
        [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    return ops.cast(_triangle_mask(N, N if M is None else M, k), dtypes.floatx() if dtype is None else dtype)


def tril(x, k=0):
    """``x`` with the elements above diagonal ``k`` (last two axes) set to zero.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.tril(ops.ones((2, 2)))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    x = _tensor(x)
    rows, cols = ops.shape(x)[-2:]
    return ops.where(_triangle_mask(rows, cols, k), x, ops.zeros_like(x))


def triu(x, k=0):
    """``x`` with the elements below diagonal ``k`` (last two axes) set to zero.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.triu(ops.ones((2, 2)))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    x = _tensor(x)
    rows, cols = ops.shape(x)[-2:]
    return ops.where(_triangle_mask(rows, cols, k - 1), ops.zeros_like(x), x)


def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis`` as a list.

    Raises:
        ValueError: ``num`` given and different from the axis length.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1, 2], [3, 4]])
        >>> [ops.to_numpy(column).tolist() for column in ops.unstack(x, axis=1)]
        [[1, 3], [2, 4]]
    """
    x = _tensor(x)
    length = ops.shape(x)[_axis(axis, ops.ndim(x), "unstack")]
    if num is not None and num != length:
        raise ValueError(f"unstack: num={num} does not match the length {length} of axis {axis}")
    if length == 1:
        return [ops.squeeze(x, axis)]
    return [ops.squeeze(part, axis) for part in ops.split(x, length, axis=axis)]


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns ``x ** (N-1) ... x ** 0`` (reversed when ``increasing``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.vander([1, 2, 3])).tolist()
        [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    x = _tensor(x)
    if ops.ndim(x) != 1:
        raise ValueError(f"vander: x must be 1-D, received shape {ops.shape(x)}")
    n = ops.shape(x)[0] if N is None else N
    powers = ops.arange(n) if increasing else ops.arange(n - 1, -1, -1)
    return ops.power(ops.expand_dims(x, 1), ops.cast(ops.expand_dims(powers, 0), ops.dtype(x)))


def diff(a, n=1, axis=-1):
    """``n``-th discrete difference along ``axis``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1, 4, 9, 16])
        >>> ops.to_numpy(ops.diff(x)).tolist(), ops.to_numpy(ops.diff(x, n=2)).tolist()
        ([3, 5, 7], [2, 2])
    """
    a = _tensor(a)
    axis = _axis(axis, ops.ndim(a), "diff")
    for _ in range(n):
        length = ops.shape(a)[axis]
        upper = ops.take(a, ops.arange(1, length), axis=axis)
        lower = ops.take(a, ops.arange(0, length - 1), axis=axis)
        a = ops.subtract(upper, lower)
    return a


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x`` or spacing ``dx``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.trapezoid([1.0, 2.0, 3.0])).tolist()
        4.0
    """
    y = _tensor(y)
    if not dtypes.is_float(ops.dtype(y)):
        y = ops.cast(y, dtypes.floatx())
    axis = _axis(axis, ops.ndim(y), "trapezoid")
    length = ops.shape(y)[axis]
    pairs = ops.add(ops.take(y, ops.arange(1, length), axis=axis), ops.take(y, ops.arange(0, length - 1), axis=axis))
    if x is None:
        return ops.multiply(ops.sum(pairs, axis=axis), dx / 2.0)
    steps = diff(ops.cast(_tensor(x), ops.dtype(y)), axis=-1 if ops.ndim(_tensor(x)) == 1 else axis)
    if ops.ndim(steps) == 1 and ops.ndim(y) > 1:
        shape = [1] * ops.ndim(y)
        shape[axis] = ops.shape(steps)[0]
        steps = ops.reshape(steps, tuple(shape))
    return ops.divide(ops.sum(ops.multiply(pairs, steps), axis=axis), 2.0)


def kron(x1, x2):
    """Kronecker product (arrays of any rank, the smaller one padded with leading ones).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.kron([1, 10], [1, 2])).tolist()
        [1, 2, 10, 20]
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    rank = max(ops.ndim(x1), ops.ndim(x2))
    s1 = (1,) * (rank - ops.ndim(x1)) + ops.shape(x1)
    s2 = (1,) * (rank - ops.ndim(x2)) + ops.shape(x2)
    left = ops.reshape(x1, tuple(d for pair in zip(s1, (1,) * rank) for d in pair))
    right = ops.reshape(x2, tuple(d for pair in zip((1,) * rank, s2) for d in pair))
    return ops.reshape(ops.multiply(left, right), tuple(a * b for a, b in zip(s1, s2)))


def inner(x1, x2):
    """Inner product over the last axes (a plain product when either is a scalar).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.inner([1, 2], [3, 4])).tolist()
        11
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    if ops.ndim(x1) == 0 or ops.ndim(x2) == 0:
        return ops.multiply(x1, x2)
    return ops.tensordot(x1, x2, axes=([ops.ndim(x1) - 1], [ops.ndim(x2) - 1]))


def vdot(x1, x2):
    """Dot product of the flattened arrays, conjugating the first.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.vdot([[1.0, 2.0]], [[3.0, 4.0]])).tolist()
        11.0
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    return ops.sum(ops.multiply(ops.conj(ops.ravel(x1)), ops.ravel(x2)))


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (2-vectors taken with a zero third component) along the given axes.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a = ops.moveaxis(_tensor(x1), axisa, -1)
    b = ops.moveaxis(_tensor(x2), axisb, -1)
    dims = (ops.shape(a)[-1], ops.shape(b)[-1])
    if any(d not in (2, 3) for d in dims):
        raise ValueError(f"cross: the vector axes must have 2 or 3 components, received {dims}")

    def parts(v):
        comps = unstack(v, axis=-1)
        return comps + [ops.zeros_like(comps[0])] if len(comps) == 2 else comps

    (a0, a1, a2), (b0, b1, b2) = parts(a), parts(b)
    z = ops.subtract(ops.multiply(a0, b1), ops.multiply(a1, b0))
    if dims == (2, 2):
        return z
    x = ops.subtract(ops.multiply(a1, b2), ops.multiply(a2, b1))
    y = ops.subtract(ops.multiply(a2, b0), ops.multiply(a0, b2))
    return ops.moveaxis(ops.stack([x, y, z], axis=-1), -1, axisc)


def correlate(x1, x2, mode="valid"):
    """Cross-correlation of two 1-D sequences, ``c[k] = sum_n x1[n + k] * conj(x2[n])`` (NumPy's modes).

    Raises:
        ValueError: inputs not 1-D, or an unknown ``mode``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.correlate([1.0, 2.0, 3.0], [0.0, 1.0])).tolist()
        [2.0, 3.0]
    """
    a, v = _tensor(x1), _tensor(x2)
    if ops.ndim(a) != 1 or ops.ndim(v) != 1:
        raise ValueError(f"correlate: expected 1-D inputs, received shapes {ops.shape(a)} and {ops.shape(v)}")
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"correlate: mode must be 'valid', 'same' or 'full', received {mode!r}")
    n, m = ops.shape(a)[0], ops.shape(v)[0]
    swapped = m > n
    if swapped:  # NumPy: correlate(a, v) = reverse(conj(correlate(v, a)))
        a, v, n, m = v, a, m, n
    v = ops.conj(v)
    if mode == "valid":
        left = right = 0
    elif mode == "same":
        left, right = m // 2, m - 1 - m // 2
    else:
        left = right = m - 1
    padded = ops.pad(a, [(left, right)])
    length = n + left + right - m + 1
    out = None
    for j in range(m):
        term = ops.multiply(ops.take(padded, ops.arange(j, j + length)), ops.getitem(v, j))
        out = term if out is None else ops.add(out, term)
    if swapped:
        out = ops.conj(ops.flip(out, axis=0))
    return out


def corrcoef(x):
    """Pearson correlation coefficients of the rows of ``x`` (NumPy's ``corrcoef``).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
        >>> ops.to_numpy(ops.corrcoef(x)).astype(float).round(4).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    covariance = ops.stats.cov(x)
    if ops.ndim(covariance) == 0:
        return ops.divide(covariance, covariance)
    scale = ops.sqrt(ops.linalg.diagonal(covariance))
    return ops.clip(ops.divide(covariance, ops.multiply(ops.expand_dims(scale, 1), ops.expand_dims(scale, 0))),
                    -1.0, 1.0)


def searchsorted(sorted_sequence, values, side="left"):
    """Insertion indices of ``values`` into the ascending 1-D ``sorted_sequence`` (int32).

    Raises:
        ValueError: ``sorted_sequence`` not 1-D or ``side`` not "left"/"right".

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.searchsorted([1, 3, 5], [0, 3, 6])).tolist()
        [0, 1, 3]
    """
    sequence, values = _tensor(sorted_sequence), _tensor(values)
    if ops.ndim(sequence) != 1:
        raise ValueError(f"searchsorted: sorted_sequence must be 1-D, received shape {ops.shape(sequence)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', received {side!r}")
    compare = ops.less if side == "left" else ops.less_equal
    below = compare(sequence, ops.expand_dims(values, -1))
    return ops.cast(ops.sum(ops.cast(below, "int32"), axis=-1), "int32")


def digitize(x, bins):
    """Index of the bin of each ``x`` for monotonically increasing ``bins`` (NumPy's ``right=False``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.digitize([0.5, 1.5, 2.5], [1.0, 2.0])).tolist()
        [0, 1, 2]
    """
    return searchsorted(bins, x, side="right")


def bincount(x, weights=None, minlength=0, sparse=False):
    """Occurrences (or summed ``weights``) of each non-negative int in ``x``; a batch of rows for 2-D ``x``.

    Raises:
        ValueError: ``sparse=True`` (Ember has no sparse arrays), or ``x`` of rank > 2.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bincount([0, 1, 1, 3])).tolist()
        [1, 2, 0, 1]
    """
    if sparse:
        raise ValueError("bincount: sparse=True is not supported (Ember has no sparse arrays); use sparse=False")
    x = _tensor(x)
    if ops.ndim(x) not in (1, 2):
        raise ValueError(f"bincount: x must be 1-D or 2-D, received shape {ops.shape(x)}")
    length = max(int(ops.to_numpy(ops.max(x))) + 1 if ops.size(x) else 0, minlength)
    hits = ops.one_hot(ops.cast(x, "int32"), length, dtype="int32" if weights is None else None)
    if weights is None:
        return ops.sum(hits, axis=-2)
    weights = _tensor(weights)
    hits = ops.cast(hits, ops.dtype(weights))
    return ops.sum(ops.multiply(hits, ops.expand_dims(weights, -1)), axis=-2)


def histogram(x, bins=10, range=None):
    """``(counts, bin_edges)`` of the flattened ``x`` in ``bins`` equal bins over ``range``.

    Example:
        >>> from ember import ops
        >>> counts, edges = ops.histogram([0.0, 1.0, 1.0, 3.0], bins=3)
        >>> ops.to_numpy(counts).tolist(), ops.to_numpy(edges).tolist()
        ([1, 2, 1], [0.0, 1.0, 2.0, 3.0])
    """
    x = ops.ravel(_tensor(x))
    if not dtypes.is_float(ops.dtype(x)):
        x = ops.cast(x, dtypes.floatx())
    if range is None:
        low, high = float(ops.to_numpy(ops.min(x))), float(ops.to_numpy(ops.max(x)))
    else:
        low, high = range
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = ops.linspace(low, high, bins + 1, dtype=ops.dtype(x))
    inside = ops.logical_and(ops.greater_equal(x, low), ops.less_equal(x, high))
    index = ops.clip(ops.subtract(searchsorted(edges, x, side="right"), 1), 0, bins - 1)
    counts = ops.sum(ops.multiply(ops.one_hot(index, bins, dtype="int32"),
                                  ops.expand_dims(ops.cast(inside, "int32"), -1)), axis=0)
    return counts, edges


def isin(x1, x2, assume_unique=False, invert=False):
    """True where an element of ``x1`` occurs in ``x2``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.isin([1, 2, 3], [2, 4])).tolist()
        [False, True, False]
    """
    x1, x2 = _tensor(x1), ops.ravel(_tensor(x2))
    found = ops.any(ops.equal(ops.expand_dims(x1, -1), x2), axis=-1)
    return ops.logical_not(found) if invert else found
