"""Quantization configs (Keras's ``QuantizationConfig``, ``Int8QuantizationConfig``)."""

from __future__ import annotations

from typing import Any

from ember.dtype_policies import QUANTIZATION_MODES
from ember.quantizers.quantizers import AbsMaxQuantizer, Quantizer, deserialize, serialize
from ember.serialization import register_serializable


@register_serializable("ember")
class QuantizationConfig:
    """Base of quantization configs: the weight quantizer and the activation (input) quantizer.

    Args:
        weight_quantizer: quantizer of the kernel (None: the mode's default, per output channel).
        activation_quantizer: quantizer of the inputs (None: inputs stay float, weight-only).

    Example:
        >>> from ember import quantizers
        >>> config = quantizers.QuantizationConfig(activation_quantizer=None)
        >>> config.activation_quantizer is None
        True
    """

    def __init__(self, weight_quantizer: Any = None, activation_quantizer: Any = None) -> None:
        self.weight_quantizer = weight_quantizer
        self.activation_quantizer = activation_quantizer

    @property
    def mode(self) -> str:
        raise NotImplementedError("QuantizationConfig is a base class: use Int8QuantizationConfig")

    def get_config(self) -> dict:
        """Keras's config (the quantizers serialized)."""
        return {"weight_quantizer": serialize(self.weight_quantizer),
                "activation_quantizer": serialize(self.activation_quantizer)}

    @classmethod
    def from_config(cls, config: dict) -> QuantizationConfig:
        return cls(weight_quantizer=deserialize(config.get("weight_quantizer")),
                   activation_quantizer=deserialize(config.get("activation_quantizer")))

    @staticmethod
    def weight_quantizer_or_default(config: Any, default: Any) -> Any:
        """The config's weight quantizer, else ``default``."""
        return config.weight_quantizer if config is not None and config.weight_quantizer is not None else default

    @staticmethod
    def activation_quantizer_or_default(config: Any, default: Any) -> Any:
        """The config's activation quantizer (None included: weight-only), else ``default`` without a config."""
        return config.activation_quantizer if config is not None else default


@register_serializable("ember")
class Int8QuantizationConfig(QuantizationConfig):
    """Int8 config: ``activation_quantizer=None`` gives weight-only int8 (float inputs).

    Args:
        weight_quantizer: an int8 quantizer of the kernel.
        activation_quantizer: ``"default"`` (``AbsMaxQuantizer()``, one scale per input row, as Keras),
            a quantizer, or None.

    Raises:
        ValueError: a weight quantizer whose output dtype is not int8.

    Example:
        >>> from ember.quantizers import Int8QuantizationConfig
        >>> Int8QuantizationConfig(activation_quantizer=None).mode
        'int8'
    """

    def __init__(self, weight_quantizer: Any = None, activation_quantizer: Any = "default") -> None:
        if isinstance(activation_quantizer, str) and activation_quantizer == "default":
            activation_quantizer = AbsMaxQuantizer()
        super().__init__(weight_quantizer, activation_quantizer)
        if weight_quantizer is not None and getattr(weight_quantizer, "output_dtype", None) != "int8":
            raise ValueError(f"Int8QuantizationConfig: the weight_quantizer must have output_dtype='int8', "
                             f"received {getattr(weight_quantizer, 'output_dtype', weight_quantizer)!r}")

    @property
    def mode(self) -> str:
        return "int8"


def validate_and_resolve_config(mode: Any, config: Any, where: str = "quantize") -> QuantizationConfig | None:
    """The config for ``quantize(mode, config)`` (Keras's rules): one of them is needed, and they agree.

    Raises:
        ValueError: neither given, a mode and config that disagree, an unknown mode.
        TypeError: a config that is not a :class:`QuantizationConfig`.
    """
    if config is not None and not isinstance(config, QuantizationConfig):
        raise TypeError(f"{where}: config must be a QuantizationConfig, received {type(config).__name__}")
    if mode is None and config is None:
        raise ValueError(f"{where}: give a mode (one of {QUANTIZATION_MODES}) or a config")
    if config is not None and mode is not None and mode != config.mode:
        raise ValueError(f"{where}: mode {mode!r} does not match the config's mode {config.mode!r}")
    resolved = config.mode if config is not None else mode
    if resolved not in QUANTIZATION_MODES:
        raise ValueError(f"{where}: invalid quantization mode {resolved!r}; expected one of {QUANTIZATION_MODES}")
    return config


__all__ = ["Int8QuantizationConfig", "QuantizationConfig", "Quantizer", "validate_and_resolve_config"]
