"""Argument checks of ``nn.layer_norm`` and ``nn.fused_batch_norm``, shared by the backends and the composites.

The fused kernels (torch's ``F.layer_norm``/``torch.native_batch_norm``, MLX's
``mx.fast.layer_norm``) and the composites of :mod:`ember.ops.extra.normalization` run the same
checks, so their errors read the same on every backend.

Example:
    >>> from ember.backends._normalization_checks import check_layer_norm
    >>> check_layer_norm((2, 3, 4), (-1, 1), (3, 4), None, 1e-3, "float32")
    (1, 2)
"""

from __future__ import annotations

from typing import Any

FLOATING_NAMES = frozenset(("float16", "bfloat16", "float32", "float64"))


def _check_common(op: str, epsilon: Any, dtype: str) -> None:
    if dtype not in FLOATING_NAMES:
        raise TypeError(f"{op}: x must have a floating dtype (float16, bfloat16, float32, float64), "
                        f"received {dtype}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon >= 0:
        raise ValueError(f"{op}: epsilon must be a number >= 0, received {epsilon!r}")


def _axes(op: str, axis: Any, rank: int) -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) as sorted non-negative axes; ValueError otherwise."""
    given = (axis,) if isinstance(axis, int) and not isinstance(axis, bool) else tuple(axis)
    resolved = []
    for a in given:
        if isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank:
            raise ValueError(f"{op}: axis {a!r} is out of range for x of rank {rank}")
        resolved.append(a % rank)
    if not resolved or len(set(resolved)) != len(resolved):
        raise ValueError(f"{op}: axis must name one or more distinct axes, received {axis!r}")
    return tuple(sorted(resolved))


def _check_param(op: str, name: str, shape: tuple | None, expected: tuple, x_shape: tuple, axes: Any) -> None:
    if shape is not None and tuple(shape) != expected:
        raise ValueError(f"{op}: {name} must have shape {expected} (x's sizes on axis {axes}), "
                         f"received shape {tuple(shape)} for x of shape {x_shape}")


def check_layer_norm(shape: tuple, axis: Any, gamma: tuple | None, beta: tuple | None, epsilon: Any,
                     dtype: str) -> tuple[int, ...]:
    """The normalized axes of ``nn.layer_norm`` (sorted, non-negative); ValueError/TypeError otherwise.

    ``gamma`` and ``beta`` (shapes, or None) must have x's sizes on those axes, in axis order.
    """
    op = "nn.layer_norm"
    shape = tuple(shape)
    _check_common(op, epsilon, dtype)
    axes = _axes(op, axis, len(shape))
    expected = tuple(shape[a] for a in axes)
    _check_param(op, "gamma", gamma, expected, shape, axis)
    _check_param(op, "beta", beta, expected, shape, axis)
    return axes


def check_batch_norm(shape: tuple, axis: Any, gamma: tuple | None, beta: tuple | None, epsilon: Any,
                     dtype: str) -> int:
    """The (non-negative) feature axis of ``nn.fused_batch_norm``; ValueError/TypeError otherwise.

    ``gamma`` and ``beta`` (shapes, or None) must be ``(x.shape[axis],)``.
    """
    op = "nn.fused_batch_norm"
    shape = tuple(shape)
    _check_common(op, epsilon, dtype)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ValueError(f"{op}: axis must be one int (the features axis), received {axis!r}")
    (resolved,) = _axes(op, axis, len(shape))
    _check_param(op, "gamma", gamma, (shape[resolved],), shape, axis)
    _check_param(op, "beta", beta, (shape[resolved],), shape, axis)
    return resolved


def check_moving(moving_mean: tuple | None, moving_variance: tuple | None, momentum: Any, shape: tuple,
                 feature: int) -> bool:
    """Whether ``nn.fused_batch_norm`` updates moving averages (both given); ValueError/TypeError otherwise."""
    op = "nn.fused_batch_norm"
    if (moving_mean is None) != (moving_variance is None):
        raise ValueError(f"{op}: moving_mean and moving_variance go together, received only "
                         f"{'moving_mean' if moving_variance is None else 'moving_variance'}")
    if moving_mean is None:
        return False
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{op}: momentum must be a float in [0, 1], received {momentum!r}")
    _check_param(op, "moving_mean", moving_mean, (shape[feature],), shape, feature)
    _check_param(op, "moving_variance", moving_variance, (shape[feature],), shape, feature)
    return True
