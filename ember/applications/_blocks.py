"""Small building blocks several application families share (named as Keras names their layers).

Example:
    >>> from ember.applications import _blocks
    >>> _blocks.make_divisible(32 * 0.35, 8)
    16
    >>> _blocks.correct_pad((None, 33, 33, 3), 3)
    ((1, 1), (1, 1))
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.symbolic import SymbolicTensor

# Keras's ResNet, DenseNet and Xception batch normalisation epsilon.
RESNET_EPSILON = 1.001e-5


def make_divisible(value: float, divisor: int, min_value: int | None = None) -> int:
    """``value`` rounded to a multiple of ``divisor``, never below 90 % of it (MobileNet's channel rule)."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


def correct_pad(shape: tuple, kernel_size: int | tuple) -> tuple:
    """The ``ZeroPadding2D`` padding before a strided ``valid`` convolution (Keras's ``correct_pad``).

    ``shape`` is the channels-last input shape, batch first.
    """
    kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    rows, cols = shape[1], shape[2]
    adjust = (1, 1) if rows is None else (1 - rows % 2, 1 - cols % 2)
    half = (kernel[0] // 2, kernel[1] // 2)
    return ((half[0] - adjust[0], half[0]), (half[1] - adjust[1], half[1]))


def conv_bn(x: SymbolicTensor, filters: int, kernel_size: Any, name: str, strides: Any = 1,
            padding: str = "valid", use_bias: bool = True, epsilon: float = RESNET_EPSILON,
            momentum: float = 0.99, activation: Any = None, conv_name: str | None = None,
            bn_name: str | None = None, act_name: str | None = None) -> SymbolicTensor:
    """``Conv2D`` -> ``BatchNormalization`` [-> ``Activation``], named ``<name>_conv``, ``_bn``, ``_relu``."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias,
                      name=conv_name or f"{name}_conv")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=epsilon, momentum=momentum, name=bn_name or f"{name}_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=act_name or f"{name}_relu")(x)
    return x


def named(name: str | None) -> dict[str, Any]:
    """``{"name": name}``, or nothing for ``None`` (the layer then takes its class's automatic name)."""
    return {} if name is None else {"name": name}


def mobile_bn(name: str) -> layers.BatchNormalization:
    """MobileNetV2/V3's batch normalisation: epsilon 1e-3, momentum 0.999."""
    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def bn_act(x: SymbolicTensor, name: str, epsilon: float = RESNET_EPSILON, activation: str = "relu",
           bn_name: str | None = None, act_name: str | None = None) -> SymbolicTensor:
    """``BatchNormalization`` -> ``Activation``, named ``<name>_bn`` and ``<name>_relu``."""
    x = layers.BatchNormalization(axis=-1, epsilon=epsilon, name=bn_name or f"{name}_bn")(x)
    return layers.Activation(activation, name=act_name or f"{name}_relu")(x)
