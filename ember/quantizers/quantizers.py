"""Abs-max int8 quantization (Keras's ``abs_max_quantize`` and ``AbsMaxQuantizer``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.serialization import register_serializable

EPSILON = 1e-7  # Keras's backend.epsilon(): keeps an all-zero slice's scale finite


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int) or not -ndim <= a < ndim:
            raise ValueError(f"abs_max_quantize: axis must be ints in [{-ndim}, {ndim}), received {axis!r}")
    return tuple(a % ndim for a in axes)


def abs_max_quantize(inputs: Any, axis: Any, value_range: tuple = (-127, 127), dtype: str = "int8",
                     epsilon: float = EPSILON, to_numpy: bool = False) -> tuple[Any, Any]:
    """Quantize ``inputs`` with one abs-max scale per slice reduced over ``axis`` (Keras's scheme).

    ``scale = value_range[1] / (max |inputs| + epsilon)`` over ``axis`` (kept as size-1 dims) and
    ``quantized = clip(round(inputs * scale), *value_range)`` cast to ``dtype``; ``quantized / scale``
    recovers ``inputs`` within ``1 / (2 * scale)`` per value.

    Args:
        inputs: a float array.
        axis: the axis (or axes) reduced for each scale (0 for a ``(in, out)`` kernel: one scale
            per output channel; -1 for activations: one per row).
        value_range: the integer range.
        dtype: the quantized dtype.
        epsilon: added to the abs-max.
        to_numpy: compute on the host with NumPy (as Keras does for weights); the results are
            converted to the active backend either way.

    Returns:
        ``(quantized, scale)``; ``scale`` has the dtype of ``inputs``.

    Example:
        >>> import ember
        >>> from ember import ops, quantizers
        >>> ember.set_backend("numpy")
        >>> q, s = quantizers.abs_max_quantize(ops.convert_to_tensor([[0.5, -1.0], [1.0, 0.1]]), axis=0)
        >>> ops.to_numpy(q).tolist(), ops.shape(s)
        ([[63, -127], [127, 13]], (1, 2))
    """
    source_dtype = ops.dtype(inputs) if ops.is_array(inputs) else "float32"
    low, high = value_range
    if to_numpy:
        host = np.asarray(ops.to_numpy(inputs) if ops.is_array(inputs) else inputs)
        axes = _axes(axis, host.ndim)
        scale = np.divide(high, np.add(np.max(np.abs(host), axis=axes, keepdims=True), epsilon))
        quantized = np.clip(np.round(np.multiply(host, scale)), low, high).astype(dtype)
        return ops.convert_to_tensor(quantized), ops.convert_to_tensor(scale.astype(source_dtype))
    x = ops.convert_to_tensor(inputs)
    axes = _axes(axis, len(ops.shape(x)))
    scale = ops.divide(high, ops.add(ops.max(ops.abs(x), axis=axes, keepdims=True), epsilon))
    scale = ops.cast(scale, ops.dtype(x))
    quantized = ops.cast(ops.clip(ops.round(ops.multiply(x, scale)), low, high), dtype)
    return quantized, scale


@register_serializable("ember")
class Quantizer:
    """Base class of quantizers (Keras's): ``quantizer(x) -> (quantized, scale)``.

    Args:
        output_dtype: the quantized dtype.

    Example:
        >>> from ember.quantizers import Quantizer
        >>> Quantizer().output_dtype
        'int8'
    """

    def __init__(self, output_dtype: str = "int8") -> None:
        self.output_dtype = output_dtype

    def __call__(self, x: Any) -> Any:
        return x

    def get_config(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} does not implement get_config()")

    @classmethod
    def from_config(cls, config: dict) -> Quantizer:
        return cls(**config)


@register_serializable("ember")
class AbsMaxQuantizer(Quantizer):
    """Abs-max quantizer (:func:`abs_max_quantize` along ``axis``; -1 when none is given).

    Args:
        axis: default axis (or axes) of the scales (Keras deprecates it in favour of the call's).
        value_range: the integer range, within ``[-128, 127]`` for int8.
        epsilon: added to the abs-max.
        output_dtype: the quantized dtype.

    Raises:
        ValueError: a ``value_range`` outside int8's.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.quantizers import AbsMaxQuantizer
        >>> ember.set_backend("numpy")
        >>> q, s = AbsMaxQuantizer()(ops.convert_to_tensor([[2.0, -1.0]]))
        >>> ops.to_numpy(q).tolist()
        [[127, -64]]
    """

    def __init__(self, axis: Any = None, value_range: tuple = (-127, 127), epsilon: float = EPSILON,
                 output_dtype: str = "int8") -> None:
        super().__init__(output_dtype)
        self.axis = None if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        self.value_range = tuple(value_range)
        self.epsilon = epsilon
        if output_dtype == "int8" and (self.value_range[0] < -128 or self.value_range[1] > 127):
            raise ValueError(f"AbsMaxQuantizer: output_dtype 'int8' needs value_range within [-128, 127], "
                             f"received {value_range!r}")

    def __call__(self, x: Any, axis: Any = None, to_numpy: bool = False) -> tuple[Any, Any]:
        chosen = axis if axis is not None else self.axis if self.axis is not None else -1
        return abs_max_quantize(x, chosen, self.value_range, self.output_dtype, self.epsilon, to_numpy)

    def get_config(self) -> dict:
        """Keras's config (``axis`` only when set)."""
        config: dict = {"value_range": list(self.value_range), "epsilon": self.epsilon,
                        "output_dtype": self.output_dtype}
        if self.axis is not None:
            config["axis"] = list(self.axis)
        return config


_CLASSES: dict[str, type[Quantizer]] = {"Quantizer": Quantizer, "AbsMaxQuantizer": AbsMaxQuantizer,
                                         "abs_max_quantizer": AbsMaxQuantizer}


def serialize(quantizer: Any) -> dict | None:
    """Keras's serialized form ``{"module", "class_name", "config", "registered_name"}`` (None stays None)."""
    if quantizer is None:
        return None
    return {"module": "keras.quantizers", "class_name": type(quantizer).__name__, "config": quantizer.get_config(),
            "registered_name": None}


def deserialize(config: Any) -> Any:
    """Inverse of :func:`serialize` (Ember's and Keras's forms).

    Raises:
        ValueError: an unknown quantizer class.
    """
    if config is None or isinstance(config, Quantizer):
        return config
    name = str(config.get("class_name", "")).rpartition(">")[2] if isinstance(config, dict) else None
    if name not in _CLASSES:  # Keras's "AbsMaxQuantizer" or Ember's registry form "ember>AbsMaxQuantizer"
        raise ValueError(f"quantizers.deserialize: expected a serialized quantizer of {sorted(_CLASSES)}, "
                         f"received {config!r}")
    return _CLASSES[name].from_config(dict(config.get("config") or {}))


def get(identifier: Any) -> Any:
    """A quantizer from None, an instance, a class name or a serialized dict.

    Example:
        >>> from ember import quantizers
        >>> type(quantizers.get("AbsMaxQuantizer")).__name__
        'AbsMaxQuantizer'
    """
    if identifier is None or isinstance(identifier, Quantizer):
        return identifier
    if isinstance(identifier, str) and identifier in _CLASSES:
        return _CLASSES[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"quantizers.get: cannot interpret {identifier!r} as a quantizer")
