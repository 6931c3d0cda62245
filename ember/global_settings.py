"""Process-wide settings Keras keeps in ``keras.config``: the fuzz factor ``epsilon``, the default
image data format, caps on ``fit``'s epochs and steps, and the fused-attention switch.

Each setting is read where it applies, when it applies: a loss clips probabilities with
:func:`epsilon` each time it runs, a layer built with ``data_format=None`` takes
:func:`image_data_format` when it is constructed (as in Keras), ``fit`` caps its epochs and steps
at the call. A compiled step keeps the values it was traced with (as under Keras's ``jit_compile``).

Example:
    >>> from ember import global_settings
    >>> global_settings.epsilon()
    1e-07
    >>> global_settings.set_epsilon(1e-5)
    >>> global_settings.epsilon()
    1e-05
    >>> global_settings.set_epsilon(1e-7)
"""

from __future__ import annotations

import math
from typing import Any

DATA_FORMATS = ("channels_last", "channels_first")

_settings: dict[str, Any] = {
    "epsilon": 1e-7,
    "image_data_format": "channels_last",
    "max_epochs": None,
    "max_steps_per_epoch": None,
    "flash_attention": None,
}


def epsilon() -> float:
    """The fuzz factor of numeric expressions (probability clipping, safe divisions): ``1e-7``."""
    return _settings["epsilon"]


def set_epsilon(value: float) -> None:
    """Set :func:`epsilon`.

    Raises:
        ValueError: ``value`` is not a finite number > 0.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"set_epsilon: expected a finite number > 0, received {value!r}")
    _settings["epsilon"] = float(value)


def image_data_format() -> str:
    """The data format layers and image ops take when given ``data_format=None``: ``"channels_last"``."""
    return _settings["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    """Set :func:`image_data_format` (``"channels_last"`` or ``"channels_first"``).

    Raises:
        ValueError: another value.
    """
    fmt = data_format.lower() if isinstance(data_format, str) else data_format
    if fmt not in DATA_FORMATS:
        raise ValueError(f"set_image_data_format: expected one of {DATA_FORMATS}, received {data_format!r}")
    _settings["image_data_format"] = fmt


def standardize_data_format(data_format: Any, owner: str = "data_format") -> str:
    """``data_format`` lower-cased and checked; None means :func:`image_data_format`.

    Raises:
        ValueError: neither ``"channels_last"`` nor ``"channels_first"`` (nor None).
    """
    if data_format is None:
        return image_data_format()
    fmt = data_format.lower() if isinstance(data_format, str) else data_format
    if fmt not in DATA_FORMATS:
        raise ValueError(f"{owner}: data_format must be one of {DATA_FORMATS} or None, received {data_format!r}")
    return fmt


def _cap(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"set_{name}: expected a positive int or None, received {value!r}")
    _settings[name] = value


def max_epochs() -> int | None:
    """The most epochs any ``fit`` runs (None: no cap), Keras's debugging switch."""
    return _settings["max_epochs"]


def set_max_epochs(value: int | None) -> None:
    """Cap the epochs of every later ``fit`` call at ``value`` (None removes the cap)."""
    _cap("max_epochs", value)


def max_steps_per_epoch() -> int | None:
    """The most steps per epoch any ``fit`` runs (None: no cap)."""
    return _settings["max_steps_per_epoch"]


def set_max_steps_per_epoch(value: int | None) -> None:
    """Cap the steps per epoch of every later ``fit`` call at ``value`` (None removes the cap)."""
    _cap("max_steps_per_epoch", value)


def capped(value: int | None, cap: int | None) -> int | None:
    """``value`` limited by ``cap`` (either may be None: no limit)."""
    if cap is None:
        return value
    return cap if value is None else min(value, cap)


def flash_attention() -> bool | None:
    """The fused-attention switch: None (the default: fused kernels where they apply), True or False."""
    return _settings["flash_attention"]


def set_flash_attention(enabled: bool | None) -> None:
    """Set :func:`flash_attention`: False keeps attention on the composite (unfused) path."""
    if enabled is not None and not isinstance(enabled, bool):
        raise ValueError(f"flash attention: expected True, False or None, received {enabled!r}")
    _settings["flash_attention"] = enabled


def interactive_logging() -> bool:
    """Whether ``fit``'s progress goes to ``sys.stdout`` (True, the default) or, when False, to the
    ``"ember"`` logger (one ``logging.info`` record per finished line, no live bar)."""
    return _settings.get("interactive_logging", True)


def enable_interactive_logging() -> None:
    """``fit``'s progress bar writes to ``sys.stdout`` (the default)."""
    _settings["interactive_logging"] = True


def disable_interactive_logging() -> None:
    """``fit``'s progress goes to the ``"ember"`` logger, one ``logging.info`` record per line."""
    _settings["interactive_logging"] = False


def is_interactive_logging_enabled() -> bool:
    """Whether ``fit``'s progress goes to ``sys.stdout`` (Keras's name for :func:`interactive_logging`)."""
    return interactive_logging()
