"""``ember.quantizers``: Keras 3's int8 quantizers (abs-max, per channel) and quantization configs.

``abs_max_quantize(x, axis)`` maps ``x`` to int8 with one scale per slice along ``axis``:
``scale = 127 / (max |x| + epsilon)`` and ``q = clip(round(x * scale), -127, 127)``, so
``x ≈ q / scale`` with an error of at most ``1 / (2 * scale)`` per value. Layers quantize
their kernels with it (``layer.quantize("int8")``, one scale per output channel) and, by
default, their inputs on the fly (one scale per row), as Keras does.

Example:
    >>> import ember
    >>> from ember import ops, quantizers
    >>> ember.set_backend("numpy")
    >>> q, scale = quantizers.abs_max_quantize(ops.convert_to_tensor([[1.0, -2.0], [0.5, 0.25]]), axis=-1)
    >>> ops.to_numpy(q).tolist(), ops.dtype(q)
    ([[64, -127], [127, 63]], 'int8')
"""

from __future__ import annotations

from ember.quantizers.config import Int8QuantizationConfig, QuantizationConfig, validate_and_resolve_config
from ember.quantizers.quantizers import (
    EPSILON,
    AbsMaxQuantizer,
    Quantizer,
    abs_max_quantize,
    deserialize,
    get,
    serialize,
)
from ember.serialization import add_keras_names

add_keras_names("keras.quantizers", (Quantizer, AbsMaxQuantizer, QuantizationConfig, Int8QuantizationConfig))

__all__ = ["EPSILON", "AbsMaxQuantizer", "Int8QuantizationConfig", "QuantizationConfig", "Quantizer",
           "abs_max_quantize", "deserialize", "get", "serialize", "validate_and_resolve_config"]
