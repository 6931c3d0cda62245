"""``ember.config``: Keras's global settings (``keras.config``) in one place.

Each function reads or sets one process-wide setting, and each setting acts where Keras's does:
``set_floatx`` the default float of new weights and arrays, ``set_epsilon`` the fuzz factor of
losses, metrics and constraints, ``set_image_data_format`` the ``data_format=None`` of layers made
afterwards and of image ops, ``set_dtype_policy`` the policy of new layers, ``set_max_epochs`` /
``set_max_steps_per_epoch`` caps on every ``fit``, ``disable_flash_attention`` the fused attention
kernels, ``disable_interactive_logging`` where ``fit``'s progress goes.

Example:
    >>> from ember import config
    >>> config.image_data_format()
    'channels_last'
    >>> config.set_max_epochs(2)
    >>> config.max_epochs()
    2
    >>> config.set_max_epochs(None)
"""

from __future__ import annotations

from ember import backends, dtypes, global_settings
from ember.dtype_policies import dtype_policy, set_dtype_policy
from ember.global_settings import (
    disable_interactive_logging,
    enable_interactive_logging,
    epsilon,
    image_data_format,
    is_interactive_logging_enabled,
    max_epochs,
    max_steps_per_epoch,
    set_epsilon,
    set_image_data_format,
    set_max_epochs,
    set_max_steps_per_epoch,
)

__all__ = [
    "backend", "disable_flash_attention", "disable_interactive_logging", "dtype_policy", "enable_flash_attention",
    "enable_interactive_logging", "epsilon", "floatx", "image_data_format", "is_flash_attention_enabled",
    "is_interactive_logging_enabled", "max_epochs", "max_steps_per_epoch", "set_backend", "set_dtype_policy",
    "set_epsilon", "set_floatx", "set_image_data_format", "set_max_epochs", "set_max_steps_per_epoch",
]

floatx = dtypes.floatx
set_floatx = dtypes.set_floatx
set_backend = backends.set_backend


def backend() -> str:
    """The active backend's name (``"numpy"``, ``"torch"`` or ``"mlx"``)."""
    return backends.get_backend()


def enable_flash_attention() -> None:
    """Use the backends' fused attention kernels wherever they apply (the default)."""
    global_settings.set_flash_attention(True)


def disable_flash_attention() -> None:
    """Keep attention on the composite path (softmax of ``QK^T``), e.g. to compare or to debug."""
    global_settings.set_flash_attention(False)


def is_flash_attention_enabled() -> bool | None:
    """True or False when set; None when left to the default (fused where it applies), as Keras."""
    return global_settings.flash_attention()
