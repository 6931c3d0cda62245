"""Resampling at arbitrary coordinates: ``map_coordinates`` and the warps built on it.

``map_coordinates`` is SciPy's/JAX's (order 0: round half to even; order 1: linear) with
Keras's fill modes; ``affine_transform``, ``perspective_transform`` and
``elastic_transform`` compute the source coordinate of every output pixel and sample there,
with Keras's conventions (its torch backend's values). Sampling is a gather
(``ops.take``) of the integer neighbours and a weighted sum whose weights are computed from
the coordinates with ``ember.ops``, so gradients reach both the images and the coordinates
(or transform) on every backend.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     x = ops.convert_to_tensor([0.0, 10.0, 20.0])
    ...     ops.to_numpy(ops.image.map_coordinates(x, [ops.convert_to_tensor([0.5, 1.25])], 1)).tolist()
    [5.0, 12.5]
"""

from __future__ import annotations

import itertools
from typing import Any

from ember import dtypes, ops
from ember.ops.image._common import (
    FILL_MODES,
    SAMPLING_INTERPOLATIONS,
    check_choice,
    check_rank,
    data_format_of,
    tensor,
    to_batched_channels_last,
)
from ember.ops.image.filters import gaussian_blur

__all__ = ["map_coordinates", "affine_transform", "perspective_transform", "elastic_transform"]


# ------------------------------------------------------------------ index fixing (integer arrays)
def _mirror(index: Any, size: int) -> Any:
    if size == 1:
        return ops.zeros_like(index)
    s = size - 1  # half-period of the triangle wave
    return ops.abs(ops.subtract(ops.mod(ops.add(index, s), 2 * s), s))


def _fix(index: Any, size: int, fill_mode: str) -> Any:
    if fill_mode in ("constant", "nearest"):
        return ops.clip(index, 0, size - 1)
    if fill_mode == "wrap":
        return ops.mod(index, size)
    if fill_mode == "mirror":
        return _mirror(index, size)
    return ops.floor_divide(ops.subtract(_mirror(ops.add(ops.multiply(index, 2), 1), 2 * size + 1), 1), 2)


def _nodes(coordinate: Any, order: int) -> list:
    """``[(integer index, weight or None), ...]`` of one axis' interpolation."""
    if order == 0:
        rounded = coordinate if not dtypes.is_float(ops.dtype(coordinate)) else ops.round(coordinate)
        return [(ops.cast(rounded, "int32"), None)]
    lower = ops.floor(coordinate)
    upper_weight = ops.subtract(coordinate, lower)
    index = ops.cast(lower, "int32")
    return [(index, ops.subtract(1.0, upper_weight)), (ops.add(index, 1), upper_weight)]


def _interpolate(flat: Any, sizes: tuple, coordinates: list, order: int, fill_mode: str, fill_value: Any) -> Any:
    """Sample ``flat`` (an array of shape ``sizes``, flattened) at ``coordinates`` (one array per axis).

    An axis whose coordinate is given as ``("exact", index)`` (an integer index array inside the
    axis, e.g. the batch or channel index) takes a single node of weight 1, always valid.
    """
    per_axis = []
    for coordinate, size in zip(coordinates, sizes):
        if isinstance(coordinate, tuple):  # ("exact", integer index): one node, always valid
            per_axis.append([(coordinate[1], None, None)])
            continue
        per_axis.append([(_fix(index, size, fill_mode),
                          ops.logical_and(ops.greater_equal(index, 0), ops.less(index, size))
                          if fill_mode == "constant" else None, weight)
                         for index, weight in _nodes(coordinate, order)])
    strides = [1] * len(sizes)
    for axis in range(len(sizes) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * sizes[axis + 1]
    result = None
    for combination in itertools.product(*per_axis):
        flat_index = None
        valid = None
        weight = None
        for (index, ok, w), stride in zip(combination, strides):
            term = index if stride == 1 else ops.multiply(index, stride)
            flat_index = term if flat_index is None else ops.add(flat_index, term)
            if ok is not None:
                valid = ok if valid is None else ops.logical_and(valid, ok)
            if w is not None:
                weight = w if weight is None else ops.multiply(weight, w)
        contribution = ops.take(flat, flat_index)
        if valid is not None:
            contribution = ops.where(valid, contribution, ops.full_like(contribution, fill_value))
        term = contribution if weight is None else ops.multiply(ops.cast(weight, ops.dtype(flat)), contribution)
        result = term if result is None else ops.add(result, term)
    return result


def _resample(images: Any, coordinates: list, order: int, fill_mode: str, fill_value: Any) -> Any:
    """``images`` sampled at ``coordinates``; integer images are interpolated in float and rounded back."""
    dtype = ops.dtype(images)
    work = images
    if order == 1 and not dtypes.is_float(dtype):
        work = ops.cast(images, dtypes.floatx())
    elif not dtypes.is_float(dtype):
        fill_value = int(fill_value)
    out = _interpolate(ops.reshape(work, (-1,)), tuple(ops.shape(images)), coordinates, order, fill_mode,
                       fill_value)
    if ops.dtype(out) != dtype:
        out = ops.cast(ops.round(out) if not dtypes.is_float(dtype) else out, dtype)
    return out


def _order(op: str, interpolation: str) -> int:
    check_choice(op, "interpolation", interpolation, tuple(SAMPLING_INTERPOLATIONS))
    return SAMPLING_INTERPOLATIONS[interpolation]


def _index_grid(shape: tuple) -> list:
    """Integer index arrays (int32) of every axis of ``shape``, broadcast to ``shape``."""
    grids = []
    for axis, size in enumerate(shape):
        view = [1] * len(shape)
        view[axis] = size
        grids.append(ops.broadcast_to(ops.reshape(ops.arange(size, dtype="int32"), view), shape))
    return grids


# ------------------------------------------------------------------ public ops
def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0):
    """Sample ``inputs`` at ``coordinates`` (SciPy's ``map_coordinates``, orders 0 and 1).

    Args:
        inputs: An array of rank ``N``.
        coordinates: ``N`` coordinate arrays (or one array of shape ``(N, ...)``), all of the output's shape.
        order: 0 (nearest, rounding half to even) or 1 (linear).
        fill_mode: Outside the array: ``"constant"`` (``fill_value``), ``"nearest"`` (edge),
            ``"wrap"`` (periodic), ``"mirror"`` (reflect about the edge pixel centres) or
            ``"reflect"`` (about the edges).
        fill_value: The value outside the array for ``"constant"``.

    Returns:
        The samples, of the coordinates' shape and the input's dtype.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4.0), (2, 2))
        >>> ops.to_numpy(ops.image.map_coordinates(x, [[0.5], [0.5]], 1)).tolist()
        [1.5]
    """
    inputs = tensor(inputs)
    rank = len(ops.shape(inputs))
    coords = [tensor(c) for c in coordinates] if isinstance(coordinates, (list, tuple)) \
        else list(ops.unstack(tensor(coordinates), axis=0))
    if len(coords) != rank:
        raise ValueError(f"map_coordinates: expected one coordinate array per axis of inputs ({rank}), received "
                         f"{len(coords)}")
    if len(ops.shape(coords[0])) < 1:
        raise ValueError(f"map_coordinates: coordinates must have rank >= 2, received shape ({rank},)")
    check_choice("map_coordinates", "fill_mode", fill_mode, FILL_MODES)
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates: order must be 0 or 1 (as in Keras), received {order!r}")
    shape = ops.shape(coords[0])
    coords = [c if tuple(ops.shape(c)) == tuple(shape) else ops.broadcast_to(c, shape) for c in coords]
    return _resample(inputs, coords, order, fill_mode, fill_value)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Warp images by affine transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]``.

    The output pixel ``(y, x)`` of channel ``c`` is read at ``x' = a0 x + a1 y + a2 + c1 c`` and
    ``y' = b0 x + b1 y + b2 + c0 c`` of the input (Keras's convention; ``c0``/``c1`` are
    normally 0).

    Args:
        images: An image (rank 3) or a batch (rank 4).
        transform: One transform ``(8,)`` or one per image ``(N, 8)``.
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_mode: ``"constant"`` (default), ``"nearest"``, ``"wrap"``, ``"mirror"`` or ``"reflect"``.
        fill_value: The value outside the image for ``"constant"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The warped images.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4.0), (2, 2, 1))
        >>> shift = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]  # read one pixel to the right
        >>> ops.to_numpy(ops.image.affine_transform(x, shift))[:, :, 0].tolist()
        [[1.0, 0.0], [3.0, 0.0]]
    """
    order = _order("affine_transform", interpolation)
    check_choice("affine_transform", "fill_mode", fill_mode, FILL_MODES)
    x, restore = to_batched_channels_last("affine_transform", images, data_format)
    transform = tensor(transform)
    if len(ops.shape(transform)) not in (1, 2) or ops.shape(transform)[-1] != 8:
        raise ValueError(f"affine_transform: expected transform of shape (8,) or (batch, 8), received shape "
                         f"{tuple(ops.shape(transform))}")
    if len(ops.shape(transform)) == 1:
        transform = ops.expand_dims(transform, 0)
    shape = tuple(ops.shape(x))
    if ops.shape(transform)[0] not in (1, shape[0]):
        raise ValueError(f"affine_transform: expected {shape[0]} transforms (one per image) or 1, received "
                         f"{ops.shape(transform)[0]}")
    dtype = ops.dtype(transform) if dtypes.is_float(ops.dtype(transform)) else dtypes.floatx()
    a0, a1, a2, b0, b1, b2, c0, c1 = (ops.reshape(ops.cast(p, dtype), (-1, 1, 1, 1))
                                      for p in ops.unstack(transform, axis=1))
    grids = _index_grid(shape)
    yy, xx, cc = (ops.cast(g, dtype) for g in grids[1:])
    # Keras's einsum order: (y, x, c) against the 3x3 matrix, then the offset.
    y_in = ops.add(ops.add(ops.add(ops.multiply(yy, b1), ops.multiply(xx, b0)), ops.multiply(cc, c0)), b2)
    x_in = ops.add(ops.add(ops.add(ops.multiply(yy, a1), ops.multiply(xx, a0)), ops.multiply(cc, c1)), a2)
    coordinates = [("exact", grids[0]), y_in, x_in, ("exact", grids[3])]
    return restore(_resample(x, coordinates, order, fill_mode, fill_value))


def _homography(start_points: Any, end_points: Any) -> Any:
    """``(N, 8)`` coefficients mapping end points to start points (Keras's linear system, solved)."""
    sx, sy = ops.unstack(start_points, axis=-1)
    ex, ey = ops.unstack(end_points, axis=-1)
    zeros, ones = ops.zeros_like(ex), ops.ones_like(ex)
    rows = []
    for k in range(4):
        exk, eyk, sxk, syk = ex[:, k], ey[:, k], sx[:, k], sy[:, k]
        z, o = zeros[:, k], ones[:, k]
        rows.append(ops.stack([exk, eyk, o, z, z, z, ops.negative(ops.multiply(sxk, exk)),
                               ops.negative(ops.multiply(sxk, eyk))], axis=-1))
        rows.append(ops.stack([z, z, z, exk, eyk, o, ops.negative(ops.multiply(syk, exk)),
                               ops.negative(ops.multiply(syk, eyk))], axis=-1))
    matrix = ops.stack(rows, axis=1)
    target = ops.stack([sx[:, 0], sy[:, 0], sx[:, 1], sy[:, 1], sx[:, 2], sy[:, 2], sx[:, 3], sy[:, 3]], axis=-1)
    return ops.squeeze(ops.solve(matrix, ops.expand_dims(target, -1)), -1)


def perspective_transform(images, start_points, end_points, interpolation="bilinear", fill_value=0,
                          data_format=None):
    """Warp images so that ``start_points`` move to ``end_points`` (four ``(x, y)`` corners each).

    Args:
        images: An image (rank 3) or a batch (rank 4), float.
        start_points: ``(4, 2)`` or ``(N, 4, 2)`` source corners.
        end_points: Their destinations, the same shape.
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_value: The value outside the image.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The warped images, ``fill_value`` where an output pixel maps from outside the input.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4.0), (2, 2, 1))
        >>> corners = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
        >>> ops.to_numpy(ops.image.perspective_transform(x, corners, corners))[:, :, 0].tolist()
        [[0.0, 1.0], [2.0, 3.0]]
    """
    order = _order("perspective_transform", interpolation)
    x, restore = to_batched_channels_last("perspective_transform", images, data_format)
    dtype = ops.dtype(x) if dtypes.is_float(ops.dtype(x)) else dtypes.floatx()
    points = []
    for name, p in (("start_points", start_points), ("end_points", end_points)):
        p = ops.cast(tensor(p), dtype)
        if tuple(ops.shape(p))[-2:] != (4, 2) or len(ops.shape(p)) not in (2, 3):
            raise ValueError(f"perspective_transform: expected {name} of shape (4, 2) or (batch, 4, 2), received "
                             f"shape {tuple(ops.shape(p))}")
        points.append(p if len(ops.shape(p)) == 3 else ops.expand_dims(p, 0))
    if ops.shape(points[0]) != ops.shape(points[1]):
        raise ValueError(f"perspective_transform: start_points and end_points must have the same shape, received "
                         f"{tuple(ops.shape(start_points))} and {tuple(ops.shape(end_points))}")
    solve_dtype = "float64" if dtype == "float64" else "float32"
    coefficients = ops.cast(_homography(*(ops.cast(p, solve_dtype) for p in points)), dtype)
    shape = tuple(ops.shape(x))
    a0, a1, a2, a3, a4, a5, a6, a7 = (ops.reshape(c, (-1, 1, 1)) for c in ops.unstack(coefficients, axis=1))
    grids = _index_grid(shape)
    gy = ops.cast(grids[1][..., 0], dtype)
    gx = ops.cast(grids[2][..., 0], dtype)
    denom = ops.add(ops.add(ops.multiply(a6, gx), ops.multiply(a7, gy)), 1.0)
    x_in = ops.divide(ops.add(ops.add(ops.multiply(a0, gx), ops.multiply(a1, gy)), a2), denom)
    y_in = ops.divide(ops.add(ops.add(ops.multiply(a3, gx), ops.multiply(a4, gy)), a5), denom)
    y_in, x_in = (ops.broadcast_to(ops.expand_dims(c, -1), shape) for c in (y_in, x_in))
    coordinates = [("exact", grids[0]), y_in, x_in, ("exact", grids[3])]
    return restore(_resample(x, coordinates, order, "constant", fill_value))


def _elastic_from_noise(x: Any, dx: Any, dy: Any, alpha: float, sigma: float, order: int, fill_mode: str,
                        fill_value: Any) -> Any:
    """The deterministic part of :func:`elastic_transform`: blur the noise ``(N, H, W)``, displace, sample."""
    size = int(6 * sigma) | 1
    shape = tuple(ops.shape(x))
    dx, dy = (ops.squeeze(gaussian_blur(ops.expand_dims(ops.multiply(d, sigma), -1), (size, size), (sigma, sigma),
                                        data_format="channels_last"), -1) for d in (dx, dy))
    grids = _index_grid(shape)
    dtype = ops.dtype(x)
    y_in = ops.add(ops.cast(grids[1][..., 0], dtype), ops.multiply(alpha, dy))
    x_in = ops.add(ops.cast(grids[2][..., 0], dtype), ops.multiply(alpha, dx))
    y_in, x_in = (ops.broadcast_to(ops.expand_dims(c, -1), shape) for c in (y_in, x_in))
    coordinates = [("exact", grids[0]), y_in, x_in, ("exact", grids[3])]
    return _resample(x, coordinates, order, fill_mode, fill_value)


def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                      seed=None, data_format=None):
    """Elastic deformation: displace pixels by Gaussian-blurred random fields scaled by ``alpha``.

    Two fields of standard normal noise ``(N, H, W)`` (scaled by ``sigma``) are blurred with a
    Gaussian of standard deviation ``sigma`` (kernel ``int(6 sigma) | 1``), scaled by ``alpha`` and
    added to the pixel grid; the image is sampled there (Keras's algorithm). The noise comes
    from ``ember.random`` with ``seed``, so a seed gives the same deformation on every run of a
    backend (Keras's torch backend ignores the seed on CPU).

    Args:
        images: Float images, rank 3 or 4.
        alpha: Displacement scale.
        sigma: Smoothness (Gaussian standard deviation, pixels).
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_mode: ``"reflect"`` (default), ``"constant"``, ``"nearest"``, ``"wrap"`` or ``"mirror"``.
        fill_value: The value outside the image for ``"constant"``.
        seed: An int or ``ember.random.SeedGenerator``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The deformed images.

    Example:
        >>> from ember import ops
        >>> x = ops.ones((4, 4, 1))
        >>> ops.shape(ops.image.elastic_transform(x, alpha=2.0, sigma=1.0, seed=0))
        (4, 4, 1)
    """
    order = _order("elastic_transform", interpolation)
    check_choice("elastic_transform", "fill_mode", fill_mode, FILL_MODES)
    data_format_of("elastic_transform", data_format)
    check_rank("elastic_transform", tensor(images))
    x, restore = to_batched_channels_last("elastic_transform", images, data_format)
    dtype = ops.dtype(x) if dtypes.is_float(ops.dtype(x)) else dtypes.floatx()
    batch, height, width = tuple(ops.shape(x))[:3]
    noise = ops.random.normal((2, batch, height, width), dtype=dtype, seed=seed)
    dx, dy = ops.unstack(noise, axis=0)
    return restore(_elastic_from_noise(x, dx, dy, float(alpha), float(sigma), order, fill_mode, fill_value))
