"""``Normalization``: feature-wise ``(x - mean) / sqrt(variance)``, statistics given or learnt by ``adapt``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, global_settings, ops
from ember.layers.layer import DeclarativeLayer


def _axes(axis: Any) -> tuple:
    if axis is None:
        return ()
    return (axis,) if isinstance(axis, int) else tuple(axis)


def cast_input(layer: Any, inputs: Any) -> tuple[Any, str]:
    """``(inputs, dtype)`` with the inputs cast to the dtype the layer computes in: its compute dtype
    when it has a ``dtype``, else the inputs' own floating dtype (``floatx()`` for integer inputs)."""
    if layer.dtype:
        dtype = layer.compute_dtype
    else:
        dtype = ops.dtype(inputs) if dtypes.is_float(ops.dtype(inputs)) else dtypes.floatx()
    return ops.cast(inputs, dtype), dtype


def host_array(data: Any) -> np.ndarray:
    """``data`` (a NumPy array, nested list, native array or Tensor, or an iterable of batches) on the host."""
    if isinstance(data, np.ndarray):
        return data
    if ops.is_array(data) or hasattr(data, "numpy"):
        return np.asarray(ops.to_numpy(data))
    if isinstance(data, (list, tuple)):
        return np.asarray(data)
    batches = [host_array(batch[0] if isinstance(batch, tuple) else batch) for batch in data]
    if not batches:
        raise ValueError("adapt: the data is empty")
    return np.concatenate(batches, axis=0)


class Normalization(DeclarativeLayer):
    """Shifts and scales inputs to zero mean and unit variance per feature along ``axis``.

    Ember layers are immutable: :meth:`adapt` *returns* the adapted layer
    (``norm = norm.adapt(data)``), whose ``mean`` and ``variance`` are part of its config, so
    they are saved with the model. A layer with neither given refuses to build.

    Args:
        axis: the feature axis or axes kept (others are reduced by ``adapt``); None: one scalar.
        mean: the mean, a number or a nested list broadcast against the kept axes.
        variance: the variance, same shape as ``mean``.
        invert: apply the inverse map ``x * sqrt(variance) + mean``.

    Example:
        >>> import ember, numpy as np
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> norm = layers.Normalization().adapt(np.array([[0.0, 10.0], [2.0, 30.0]]))
        >>> norm.mean, norm.variance
        ([1.0, 20.0], [1.0, 100.0])
        >>> y, _ = norm.apply(norm.build((None, 2)), ops.convert_to_tensor([[1.0, 40.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0.0, 2.0]]
    """

    axis: Any = -1
    mean: Any = None
    variance: Any = None
    invert: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        axes = _axes(self.axis)
        if any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise ValueError(f"{self.name}: axis must be an int, a tuple of ints or None, received {self.axis!r}")
        self._normalize("axis", self.axis if self.axis is None or isinstance(self.axis, int) else list(axes))
        if (self.mean is None) != (self.variance is None):
            raise ValueError(f"{self.name}: give both mean and variance, or neither (then call adapt)")
        for field in ("mean", "variance"):
            value = getattr(self, field)
            if value is not None:
                array = np.asarray(value, dtype=np.float64)
                if not np.all(np.isfinite(array)):
                    raise ValueError(f"{self.name}: {field} must be finite numbers, received {value!r}")
                self._normalize(field, array.tolist())
        if self.variance is not None and np.any(np.asarray(self.variance) < 0):
            raise ValueError(f"{self.name}: variance must be >= 0, received {self.variance!r}")

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> Normalization:
        """A copy of this layer with ``mean``/``variance`` computed from ``data`` over the non-kept axes.

        ``data`` is an array, a nested list, or an iterable of batches (or of ``(x, y)`` tuples).
        """
        del batch_size, steps  # the data is read whole
        array = host_array(data).astype(np.float64)
        rank = array.ndim
        kept = {a % rank for a in _axes(self.axis)}
        reduce = tuple(a for a in range(rank) if a not in kept)
        mean = array.mean(axis=reduce, keepdims=True)
        variance = array.var(axis=reduce, keepdims=True)
        squeeze = tuple(a for a in range(rank) if a not in kept and a == 0)  # drop the batch axis, keep the rest
        return self.replace(mean=np.squeeze(mean, axis=squeeze).tolist(),
                            variance=np.squeeze(variance, axis=squeeze).tolist())

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        if self.mean is None:
            raise ValueError(f"layer {self.name!r} has no mean and variance: pass them, or adapt it first with "
                             f"layer = layer.adapt(data) (Ember layers are immutable; adapt returns the new layer)")
        return super().build(input_shape, seed)

    def call(self, params: dict, inputs: Any) -> Any:
        x, dtype = cast_input(self, inputs)
        mean = ops.convert_to_tensor(self.mean, dtype=dtype)
        std = ops.maximum(ops.sqrt(ops.convert_to_tensor(self.variance, dtype=dtype)), global_settings.epsilon())
        if self.invert:
            return ops.add(ops.multiply(x, std), mean)
        return ops.divide(ops.subtract(x, mean), std)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
