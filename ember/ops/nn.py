"""``ember.ops.nn``: filled with the active backend's functions (see :mod:`ember.backends._spec`).

Keras's ``keras.ops.nn`` also holds ops that Ember keeps in :mod:`ember.ops` itself (``one_hot``,
``swish``, ``depthwise_conv`` ...): those names are read from ``ember.ops`` when asked for here.
"""
import sys as _sys

from ember.ops import _select_on_first_use

# Keras's keras.ops.nn names whose Ember op lives in ember.ops (one definition, two paths).
FROM_CORE = frozenset({
    "adaptive_average_pool", "adaptive_max_pool", "average_pool", "batch_normalization", "binary_crossentropy",
    "categorical_crossentropy", "celu", "ctc_decode", "ctc_loss", "depth_to_space", "depthwise_conv", "glu",
    "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "layer_normalization", "log_sigmoid", "multi_hot",
    "normalize", "one_hot", "psnr", "rms_normalization", "separable_conv", "soft_shrink", "space_to_depth",
    "sparse_categorical_crossentropy", "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "swish",
    "tanh_shrink", "threshold", "unfold",
})


def __getattr__(name: str):
    if name in FROM_CORE:
        return getattr(_sys.modules["ember.ops"], name)
    return _select_on_first_use("nn", name)
