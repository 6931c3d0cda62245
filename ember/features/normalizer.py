"""Scaling vectors to unit norm: the ``normalize`` function and the ``Normalizer`` transformer."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.features.transformer import Transformer, as_float, int_scalar

NORMS = ("l1", "l2", "max")


def _check_norm(norm: Any, where: str) -> None:
    if norm not in NORMS:
        raise ValueError(f"{where}: norm must be one of {NORMS}, received {norm!r}")


def normalize(x: Any, norm: str = "l2", axis: int = -1) -> Any:
    """``x`` divided by its ``norm`` along ``axis``; all-zero vectors are returned unchanged.

    Args:
        x: array of any rank (NumPy, list, native array or ``Tensor``).
        norm: ``"l2"`` (Euclidean), ``"l1"`` (sum of absolute values) or ``"max"``
            (largest absolute value), as scikit-learn's ``normalize``.
        axis: the axis holding each vector (``-1``: rows of a matrix, scikit-learn's
            ``axis=1``; ``0``: columns).

    Returns:
        A floating native array of ``x``'s shape (integers are computed in ``floatx()``).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.normalize([[3.0, 4.0], [0.0, 0.0]])).astype(float).round(4).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
        >>> ops.to_numpy(features.normalize([[1.0, -4.0]], norm="max")).tolist()
        [[0.25, -1.0]]
    """
    _check_norm(norm, "normalize")
    x = as_float(x, "normalize: x")
    ndim = ops.ndim(x)
    if ndim == 0 or not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise ValueError(f"normalize: axis {axis!r} is out of range for an input of rank {ndim}")
    if norm == "l2":
        norms = ops.sqrt(ops.sum(ops.square(x), axis=axis, keepdims=True))
    elif norm == "l1":
        norms = ops.sum(ops.abs(x), axis=axis, keepdims=True)
    else:
        norms = ops.max(ops.abs(x), axis=axis, keepdims=True) if ops.shape(x)[axis] else ops.ones_like(
            ops.sum(x, axis=axis, keepdims=True))
    return ops.divide(x, ops.where(ops.equal(norms, 0), ops.ones_like(norms), norms))


class Normalizer(Transformer):
    """Scale each sample (row) to unit norm: :func:`normalize` as a transformer.

    Stateless apart from the feature count: ``fit`` records ``n_features_in_`` so that
    ``transform`` can check it, as scikit-learn.

    Args:
        norm: ``"l2"``, ``"l1"`` or ``"max"``.

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.Normalizer(norm="l1").fit_transform([[1.0, 3.0]])).tolist()
        [[0.25, 0.75]]
    """

    _required_state = ("n_features_in_",)

    norm: str = "l2"

    def __post_init__(self) -> None:
        _check_norm(self.norm, "Normalizer")

    def _fit(self, x: Any) -> dict:
        x = self.check_input(x, "fit", fitted=False)
        return {"n_features_in_": int_scalar(ops.shape(x)[1])}

    def transform(self, x: Any) -> Any:
        """Each row of ``x`` divided by its norm (zero rows unchanged).

        Raises:
            NotFittedError: before ``fit``. ValueError: wrong feature count, NaN, not 2-D.
        """
        return normalize(self.check_input(x, "transform"), norm=self.norm, axis=1)
