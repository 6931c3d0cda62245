"""``Masking``: mark time steps whose features all equal ``mask_value`` as padding."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer


class Masking(DeclarativeLayer):
    """Skips padded time steps in the recurrent layers downstream.

    A step ``inputs[b, t, :]`` whose features ALL equal ``mask_value`` is padding: the
    layer outputs the inputs with those steps zeroed, and its :meth:`compute_mask` is
    ``any(inputs != mask_value, axis=-1)`` (``(batch, time)``, True for real steps).
    In a ``Sequential`` or functional model that mask reaches the following layers
    that accept ``mask=`` (``LSTM``, ``GRU``, ``RNN``, ``Bidirectional``,
    ``TimeDistributed``), through layers that pass masks on; outside a model pass it
    yourself: ``lstm.apply(state, x, mask=masking.compute_mask(x))``.

    Args:
        mask_value: the padding value.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.convert_to_tensor([[[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]]])
        >>> layers.Masking(0.0).compute_mask(x).tolist()
        [[True, False, True]]
        >>> model = ember.Sequential([ember.Input((3, 2)), layers.Masking(), layers.LSTM(4)])
        >>> _ = model.build(seed=0)
        >>> ops.shape(model(x))
        (1, 4)
    """

    mask_value: float = 0.0

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        value = self.mask_value
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{self.name}: mask_value must be a number, received {value!r}")
        self._normalize("mask_value", float(value))

    def call(self, params: dict, inputs: Any) -> Any:
        keep = ops.any(ops.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)
        return ops.multiply(inputs, ops.cast(keep, ops.dtype(inputs)))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """``any(inputs != mask_value, axis=-1)``: True for the steps to keep."""
        return ops.any(ops.not_equal(inputs, self.mask_value), axis=-1)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return input_shape_of(self, input_shape, min_rank=2)
