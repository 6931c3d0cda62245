"""The ``Loss`` base class, Keras 3's reductions and the helpers every loss shares.

A loss object holds configuration only (reduction, name, dtype and its own
arguments); ``loss(y_true, y_pred, sample_weight=None)`` computes per-sample losses
with :meth:`Loss.call` and reduces them with :func:`reduce_weighted_values`. Every
computation goes through :mod:`ember.ops`, so losses run on every backend, under
gradient tapes and inside ``mx.compile``.

Example:
    >>> import ember
    >>> from ember import losses
    >>> ember.set_backend("numpy")
    >>> mse = losses.MeanSquaredError(reduction="sum")
    >>> float(mse([[0.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 0.0]]))
    1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.global_settings import epsilon
from ember.naming import to_snake_case
from ember.serialization import deserialize, register_serializable, serialize

EPSILON = 1e-7  # the default of ember.global_settings.epsilon(); code reads epsilon()
"""Keras's ``backend.epsilon()``: probabilities are clipped to ``[epsilon(), 1 - epsilon()]``."""

REDUCTIONS = ("sum", "sum_over_batch_size", "mean", "mean_with_sample_weight", "none", None)
"""Keras 3's reductions. ``"sum_over_batch_size"`` and ``"mean"`` divide the weighted sum by
the number of elements, ``"mean_with_sample_weight"`` by the sum of the sample weights;
``"none"``/``None`` return the per-sample losses."""


def standardize_reduction(reduction: Any, owner: str = "Loss") -> str | None:
    """``reduction`` if it is one of :data:`REDUCTIONS`, else ``ValueError`` listing them.

    Example:
        >>> standardize_reduction("sum")
        'sum'
    """
    if not (reduction is None or isinstance(reduction, str)) or reduction not in REDUCTIONS:
        raise ValueError(f"{owner}: invalid reduction={reduction!r}; expected one of {REDUCTIONS}")
    return reduction


def float_dtype(dtype: Any, owner: str) -> str:
    """``dtype`` standardized, checked to be a floating dtype (``ValueError`` naming ``owner``)."""
    name = dtypes.standardize_dtype(dtype)
    if not dtypes.is_float(name):
        raise ValueError(f"{owner}: dtype must be a floating dtype, received dtype={name!r}")
    return name


def compute_dtype(y_pred: Any) -> str:
    """The dtype a loss object computes in when it has no ``dtype``: ``y_pred``'s own when
    that is float32/float64, else ``floatx()`` (half-precision predictions are promoted, as
    Keras computes losses in float32 under mixed precision)."""
    name = ops.dtype(y_pred)
    return name if name in ("float32", "float64") else dtypes.floatx()


def as_float(x: Any, owner: str, argument: str = "y_pred") -> Any:
    """``x`` as a native floating array (integers/bools become ``floatx()``).

    Raises:
        TypeError: complex values.
    """
    x = ops.convert_to_tensor(x)
    name = ops.dtype(x)
    if dtypes.is_complex(name):
        raise TypeError(f"{owner}: {argument} must be real-valued, received dtype {name}")
    return x if dtypes.is_float(name) else ops.cast(x, dtypes.floatx())


def labels_to_tensor(y_true: Any, owner: str) -> Any:
    """``y_true`` as a native array; ``TypeError`` naming ``owner`` and the fix for string or
    object labels (the same message on every backend)."""
    dtypes.check_numeric_labels(y_true, owner, "y_true")
    return ops.convert_to_tensor(y_true)


def labels_like(y_true: Any, y_pred: Any, owner: str) -> Any:
    """``y_true`` as a native array with ``y_pred``'s (floating) dtype."""
    y_true = labels_to_tensor(y_true, owner)
    name = ops.dtype(y_true)
    if dtypes.is_complex(name):
        raise TypeError(f"{owner}: y_true must be real-valued, received dtype {name}")
    target = ops.dtype(y_pred)
    return y_true if name == target else ops.cast(y_true, target)


def prepare(y_true: Any, y_pred: Any, owner: str) -> tuple[Any, Any]:
    """Convert both arrays (y_true to y_pred's float dtype) and squeeze/expand to one rank."""
    y_pred = as_float(y_pred, owner)
    y_true = labels_like(y_true, y_pred, owner)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def squeeze_or_expand_to_same_rank(x1: Any, x2: Any, expand_rank_1: bool = True) -> tuple[Any, Any]:
    """Keras's rank fix-up: when ranks differ by one and the longer has a trailing 1, squeeze
    it (or, for a rank-1 partner and ``expand_rank_1``, expand the partner instead).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> a, b = squeeze_or_expand_to_same_rank(ops.zeros((4, 1)), ops.zeros((4,)))
        >>> ops.shape(a), ops.shape(b)
        ((4, 1), (4, 1))
    """
    shape1, shape2 = ops.shape(x1), ops.shape(x2)
    if len(shape1) == len(shape2) + 1 and shape1[-1] == 1:
        if len(shape2) == 1 and expand_rank_1:
            x2 = ops.expand_dims(x2, -1)
        else:
            x1 = ops.squeeze(x1, -1)
    elif len(shape2) == len(shape1) + 1 and shape2[-1] == 1:
        if len(shape1) == 1 and expand_rank_1:
            x1 = ops.expand_dims(x1, -1)
        else:
            x2 = ops.squeeze(x2, -1)
    return x1, x2


def check_broadcastable(owner: str, y_true: Any, y_pred: Any) -> None:
    """``ValueError`` naming ``owner`` and both shapes unless they broadcast together."""
    a, b = ops.shape(y_true), ops.shape(y_pred)
    if a != b:
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            raise ValueError(
                f"{owner}: y_true and y_pred must have the same (or broadcast-compatible) shapes; "
                f"received y_true.shape={a}, y_pred.shape={b}"
            ) from None


def check_same_shape(owner: str, y_true: Any, y_pred: Any, hint: str = "") -> None:
    """``ValueError`` naming ``owner`` and both shapes unless they are equal."""
    a, b = ops.shape(y_true), ops.shape(y_pred)
    if a != b:
        raise ValueError(
            f"{owner}: y_true must have the shape of y_pred, expected {b}, received y_true.shape={a} "
            f"(y_pred.shape={b}){hint}"
        )


def divide_no_nan(x: Any, y: Any) -> Any:
    """``x / y``, 0 where ``y == 0`` (gradient-safe: no NaN from the unused branch)."""
    zero = ops.equal(y, 0)
    return ops.where(zero, ops.zeros_like(x), ops.divide(x, ops.where(zero, ops.ones_like(y), y)))


def _as_weights(owner: str, sample_weight: Any, dtype: str) -> Any:
    weight = ops.convert_to_tensor(sample_weight)
    name = ops.dtype(weight)
    if dtypes.is_complex(name):
        raise TypeError(f"{owner}: sample_weight must be real-valued, received dtype {name}")
    return weight if name == dtype else ops.cast(weight, dtype)


def _match_weights(owner: str, values: Any, weight: Any) -> tuple[Any, Any]:
    """Keras's squeeze/expand, then weights of lower rank get trailing axes (so per-sample
    weights ``(batch,)`` broadcast over per-timestep losses ``(batch, steps)``)."""
    values, weight = squeeze_or_expand_to_same_rank(values, weight)
    extra = len(ops.shape(values)) - len(ops.shape(weight))
    if extra > 0 and len(ops.shape(weight)) > 0:
        weight = ops.reshape(weight, ops.shape(weight) + (1,) * extra)
    try:
        np.broadcast_shapes(ops.shape(values), ops.shape(weight))
    except ValueError:
        shape = ops.shape(values)
        expected = f"{shape[:1]} or {shape}" if len(shape) > 1 else f"{shape}"
        raise ValueError(
            f"{owner}: sample_weight of shape {ops.shape(weight)} does not broadcast against the "
            f"per-sample losses of shape {shape}; expected shape {expected}"
        ) from None
    return values, weight


def apply_mask(sample_weight: Any, mask: Any, dtype: str, reduction: str | None, owner: str = "loss") -> Any:
    """Merge a validity ``mask`` into ``sample_weight`` as Keras does: under ``"mean"`` and
    ``"sum_over_batch_size"`` the valid entries get weight ``total / valid`` so the reduction
    averages over valid entries only."""
    if mask is None:
        return sample_weight
    mask = ops.cast(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = float(max(ops.size(mask), 1))
        mask = ops.multiply(mask, ops.divide(total, ops.add(ops.sum(mask), epsilon())))
    if sample_weight is None:
        return mask
    mask, sample_weight = _match_weights(owner, mask, sample_weight)
    return ops.multiply(sample_weight, mask)


def reduce_values(values: Any, sample_weight: Any = None, reduction: str | None = "sum_over_batch_size") -> Any:
    """Reduce (already weighted) ``values`` by ``reduction`` (Keras 3's ``reduce_values``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> float(reduce_values(ops.convert_to_tensor([1.0, 2.0, 3.0]), reduction="mean"))
        2.0
    """
    if reduction is None or reduction == "none" or len(ops.shape(values)) == 0:
        return values
    loss = ops.sum(values)
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return divide_no_nan(loss, ops.sum(sample_weight))
    if reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
        count = ops.size(values)
        return ops.divide(loss, float(count)) if count else loss
    return loss


def reduce_weighted_values(
    values: Any,
    sample_weight: Any = None,
    mask: Any = None,
    reduction: str | None = "sum_over_batch_size",
    owner: str = "loss",
) -> Any:
    """Weight per-sample ``values`` by ``sample_weight`` (and a validity ``mask``) and reduce.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> v = ops.convert_to_tensor([1.0, 3.0])
        >>> float(reduce_weighted_values(v, [1.0, 0.0], reduction="mean_with_sample_weight"))
        1.0
    """
    reduction = standardize_reduction(reduction, owner)
    values = ops.convert_to_tensor(values)
    dtype = ops.dtype(values)
    if sample_weight is not None:
        sample_weight = _as_weights(owner, sample_weight, dtype)
    sample_weight = apply_mask(sample_weight, mask, dtype, reduction, owner)
    if sample_weight is not None:
        values, sample_weight = _match_weights(owner, values, sample_weight)
        values = ops.multiply(values, sample_weight)
        if reduction == "mean_with_sample_weight" and ops.shape(sample_weight) != ops.shape(values):
            # Ember: the divisor counts each weight once per loss value it multiplied
            # (Keras sums the unbroadcast weights, e.g. once per sequence, not per step).
            sample_weight = ops.broadcast_to(sample_weight, ops.shape(values))
    return reduce_values(values, sample_weight, reduction)


@register_serializable(package="ember")
class Loss:
    """Base class of losses: ``loss(y_true, y_pred, sample_weight=None)`` -> reduced loss.

    Subclasses implement :meth:`call` (per-sample losses). The object holds configuration
    only; calling it is pure.

    Args:
        name: the loss's name (default: the class name in snake case).
        reduction: one of :data:`REDUCTIONS` (Keras 3 semantics).
        dtype: the dtype to compute in. ``None`` (Ember's default) computes in ``y_pred``'s
            dtype when it is float32/float64 and in ``floatx()`` otherwise.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> class Absolute(losses.Loss):
        ...     def call(self, y_true, y_pred):
        ...         return ops.mean(ops.abs(ops.subtract(y_pred, y_true)), axis=-1)
        >>> float(Absolute()([[1.0], [2.0]], [[2.0], [2.0]]))
        0.5
    """

    def __init__(self, name: str | None = None, reduction: str | None = "sum_over_batch_size", dtype: Any = None):
        owner = type(self).__name__
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{owner}: name must be a string or None, received {name!r}")
        self.name = name if name is not None else to_snake_case(owner)
        self.reduction = standardize_reduction(reduction, owner)
        self.dtype = None if dtype is None else float_dtype(dtype, owner)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """The reduced loss (per-sample losses for ``reduction="none"``) as a native array."""
        y_pred = as_float(y_pred, self.name)
        dtype = self.dtype or compute_dtype(y_pred)
        if ops.dtype(y_pred) != dtype:
            y_pred = ops.cast(y_pred, dtype)
        values, mask = self.call_with_mask(y_true, y_pred)
        values = ops.convert_to_tensor(values)
        if ops.dtype(values) != dtype:
            values = ops.cast(values, dtype)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction, self.name)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        """Per-sample losses (shape ``y_pred.shape[:-1]`` for the built-in losses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def call_with_mask(self, y_true: Any, y_pred: Any) -> tuple[Any, Any]:
        """``(per-sample losses, validity mask or None)``; the mask (e.g. from ``ignore_class``)
        takes part in the reduction as in Keras."""
        return self.call(y_true, y_pred), None

    def get_config(self) -> dict:
        """The constructor arguments (JSON data)."""
        return {"name": self.name, "reduction": self.reduction, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        """Rebuild from :meth:`get_config`'s output."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "fn")
        return f"{type(self).__name__}({args})"


@register_serializable(package="ember")
class LossFunctionWrapper(Loss):
    """A :class:`Loss` around a per-sample loss function ``fn(y_true, y_pred, **kwargs)``.

    Args:
        fn: the function (serializable when it is a built-in loss function or registered
            with ``ember.saving.register_serializable``).
        reduction, name, dtype: as for :class:`Loss` (``name`` defaults to ``fn.__name__``).
        **kwargs: passed to ``fn`` on every call (and saved in the config).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> loss = losses.LossFunctionWrapper(losses.huber, delta=0.5)
        >>> loss.name, float(loss([[0.0]], [[2.0]]))
        ('huber', 0.875)
    """

    def __init__(
        self,
        fn: Callable,
        reduction: str | None = "sum_over_batch_size",
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}: fn must be callable, received {fn!r}")
        super().__init__(name=name if name is not None else getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        if "from_logits" in kwargs and not isinstance(kwargs["from_logits"], (bool, np.bool_)):
            raise TypeError(f"{self.name}: from_logits must be True or False, received {kwargs['from_logits']!r}")
        self.fn = fn
        self._fn_kwargs = dict(kwargs)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is LossFunctionWrapper:
            config["fn"] = serialize(self.fn)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        config = dict(config)
        if "fn" in config:
            config["fn"] = deserialize(config["fn"])
        return cls(**config)


def check_fraction(owner: str, argument: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1]`` (``ValueError`` naming the argument otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not 0 <= value <= 1:
        raise ValueError(f"{owner}: {argument} must be a float in [0, 1], received {argument}={value!r}")
    return float(value)


def check_axis(owner: str, axis: Any) -> int:
    """``axis`` as an int (``TypeError`` naming ``owner`` otherwise)."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{owner}: axis must be an int, received axis={axis!r}")
    return int(axis)


def concrete(x: Any) -> Any:
    """``x`` as a NumPy value, or None while it has no value yet (inside ``mx.compile``)."""
    try:
        return ops.to_numpy(x)
    except Exception:  # noqa: BLE001 - tracers of compiled functions refuse evaluation
        return None
