"""``ember.mixed_precision``: Keras's mixed-precision names (dtype policies and loss scaling).

``set_global_policy("mixed_bfloat16")`` makes every layer constructed afterwards keep its
variables in float32 and compute in bfloat16 (``"mixed_float16"``: float16, with dynamic loss
scaling added by ``compile``); normalization statistics, softmax and the losses stay in
float32. See :mod:`ember.dtype_policies` and :mod:`ember.layers.autocast` for what is cast
where, and :class:`LossScaleOptimizer` for the loss scaling.

Backends: bfloat16 and float16 compute on the CPU on NumPy (16-bit matmuls and reductions
accumulate in float32 and round once), torch and MLX; on a GPU, torch and MLX run them natively.

Example:
    >>> import ember
    >>> from ember import layers, mixed_precision
    >>> mixed_precision.set_global_policy("mixed_bfloat16")
    >>> dense = layers.Dense(4)
    >>> dense.compute_dtype, dense.variable_dtype
    ('bfloat16', 'float32')
    >>> mixed_precision.set_global_policy("float32")
    >>> mixed_precision.global_policy()
    <DTypePolicy "float32">
"""

from __future__ import annotations

from ember.dtype_policies import (  # noqa: F401
    DTypePolicy,
    Policy,
    dtype_policy,
    global_policy,
    set_dtype_policy,
    set_global_policy,
)
from ember.training.optimizers import LossScaleOptimizer  # noqa: F401

__all__ = ["DTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy", "global_policy", "set_dtype_policy",
           "set_global_policy"]
