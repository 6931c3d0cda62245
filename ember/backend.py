"""``ember.backend``: the names of Keras's ``keras.backend`` module (``from keras import backend as K``).

Example:
    >>> from ember import backend as K
    >>> K.floatx(), K.epsilon(), K.image_data_format()
    ('float32', 1e-07, 'channels_last')
    >>> K.is_float_dtype("float16"), K.is_int_dtype("float16")
    (True, False)
"""

from __future__ import annotations

from typing import Any

from ember import backends, dtypes
from ember.global_settings import epsilon, image_data_format, set_epsilon, set_image_data_format
from ember.layers import clear_session
from ember.layers.layer import next_uid
from ember.symbolic import SymbolicTensor

__all__ = [
    "backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format", "is_float_dtype",
    "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon", "set_floatx", "set_image_data_format",
    "standardize_dtype",
]

floatx = dtypes.floatx
set_floatx = dtypes.set_floatx
standardize_dtype = dtypes.standardize_dtype
result_type = dtypes.result_type


def backend() -> str:
    """The active backend's name."""
    return backends.get_backend()


def is_float_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is a floating dtype (``"float32"``, ``"bfloat16"`` ...)."""
    return dtypes.is_float(dtype)


def is_int_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is an integer dtype (signed or unsigned)."""
    return dtypes.is_integer(dtype)


def is_keras_tensor(x: Any) -> bool:
    """Whether ``x`` is a symbolic tensor (``ember.Input(...)`` or a layer's output on one)."""
    return isinstance(x, SymbolicTensor)


def get_uid(prefix: str = "") -> int:
    """A count for ``prefix``, 1 on its first use: the counter automatic layer names use (``dense``,
    ``dense_1``: after one ``Dense``, ``get_uid("dense")`` is 2), reset by :func:`clear_session`."""
    return next_uid(prefix)
