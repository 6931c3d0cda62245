"""MobileNetV3Small and MobileNetV3Large (Howard et al. 2019), with Keras 3's layer graph and names.

The models take pixels in [0, 255] (a ``Rescaling`` layer to [-1, 1] is part of them unless
``include_preprocessing=False``), so :func:`preprocess_input` returns its input unchanged. Keras
writes the hard sigmoid as tensor arithmetic (``relu6(x + 3) * (1 / 6)``); Ember writes the same
computation with weightless layers (``Rescaling``, ``ReLU``, ``Rescaling``), one per Keras operation,
so the weighted layers keep Keras's order and Keras weight files load.

Example:
    >>> import ember
    >>> from ember.applications import mobilenet_v3
    >>> ember.set_backend("numpy")
    >>> model = mobilenet_v3.MobileNetV3Small(input_shape=(32, 32, 3), alpha=0.75, classes=10)
    >>> model.output_shape
    (None, 10)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import correct_pad, make_divisible, mobile_bn
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

Activation = Callable[[SymbolicTensor], SymbolicTensor]
# (expansion, filters, kernel ("k": 5, or 3 when minimalistic), stride, squeeze-excite, activation ("hs": hard
# swish, or ReLU when minimalistic)) of each inverted residual block.
SMALL = ((1, 16, 3, 2, True, "relu"), (72 / 16, 24, 3, 2, False, "relu"), (88 / 24, 24, 3, 1, False, "relu"),
         (4, 40, "k", 2, True, "hs"), (6, 40, "k", 1, True, "hs"), (6, 40, "k", 1, True, "hs"),
         (3, 48, "k", 1, True, "hs"), (3, 48, "k", 1, True, "hs"), (6, 96, "k", 2, True, "hs"),
         (6, 96, "k", 1, True, "hs"), (6, 96, "k", 1, True, "hs"))
LARGE = ((1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"), (3, 24, 3, 1, False, "relu"),
         (3, 40, "k", 2, True, "relu"), (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
         (6, 80, 3, 2, False, "hs"), (2.5, 80, 3, 1, False, "hs"), (2.3, 80, 3, 1, False, "hs"),
         (2.3, 80, 3, 1, False, "hs"), (6, 112, 3, 1, True, "hs"), (6, 112, 3, 1, True, "hs"),
         (6, 160, "k", 2, True, "hs"), (6, 160, "k", 1, True, "hs"), (6, 160, "k", 1, True, "hs"))


def relu(x: SymbolicTensor) -> SymbolicTensor:
    """An unnamed ``ReLU`` layer (as Keras's MobileNetV3 uses)."""
    return layers.ReLU()(x)


def hard_sigmoid(x: SymbolicTensor) -> SymbolicTensor:
    """``relu6(x + 3) / 6`` as three weightless layers (Keras: two tensor operations around a ``ReLU``)."""
    x = layers.Rescaling(scale=1.0, offset=3.0)(x)
    x = layers.ReLU(6.0)(x)
    return layers.Rescaling(scale=1.0 / 6.0)(x)


def hard_swish(x: SymbolicTensor) -> SymbolicTensor:
    """An unnamed ``Activation("hard_swish")`` layer."""
    return layers.Activation("hard_swish")(x)


def _squeeze_excite(inputs: SymbolicTensor, filters: int, ratio: float, prefix: str) -> SymbolicTensor:
    x = layers.GlobalAveragePooling2D(keepdims=True, name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(make_divisible(filters * ratio, 8), kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv")(x)
    x = layers.ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", name=f"{prefix}squeeze_excite_conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def _inverted_residual(x: SymbolicTensor, expansion: float, filters: int, kernel_size: int, stride: int,
                       se_ratio: float | None, activation: Activation, block_id: int) -> SymbolicTensor:
    shortcut = x
    in_filters = x.shape[-1]
    expanded = make_divisible(in_filters * expansion, 8)
    prefix = f"expanded_conv_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = layers.Conv2D(expanded, kernel_size=1, padding="same", use_bias=False, name=f"{prefix}expand")(x)
        x = mobile_bn(f"{prefix}expand_bn")(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x.shape, kernel_size), name=f"{prefix}depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride, padding="same" if stride == 1 else "valid",
                               use_bias=False, name=f"{prefix}depthwise")(x)
    x = mobile_bn(f"{prefix}depthwise_bn")(x)
    x = activation(x)
    if se_ratio:
        x = _squeeze_excite(x, expanded, se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = mobile_bn(f"{prefix}project_bn")(x)
    if stride == 1 and in_filters == filters:
        x = layers.Add(name=f"{prefix}add")([shortcut, x])
    return x


def build_mobilenet_v3(family: str, blocks: tuple, last_point_ch: int, input_shape: Any, alpha: float,
                       minimalistic: bool, include_top: bool, weights: Any, input_tensor: Any, classes: int,
                       pooling: Any, dropout_rate: float, classifier_activation: Any, include_preprocessing: bool,
                       name: str) -> Model:
    """The stem, ``blocks`` and the head of a MobileNetV3 (Keras's ``MobileNetV3``)."""
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    if input_shape is None and input_tensor is not None:
        input_shape = tuple(input_tensor.shape[1:]) if hasattr(input_tensor, "shape") else None
    shape = _args.input_shape_for(family, input_shape, default_size=224, min_size=32, include_top=False)
    image = _graph.image_input(family, input_tensor, shape)
    kernel, activation, se_ratio = (3, relu, None) if minimalistic else (5, hard_swish, 0.25)
    x = image
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False, name="conv")(x)
    x = mobile_bn("conv_bn")(x)
    x = activation(x)
    for block_id, (expansion, filters, size, stride, se, act) in enumerate(blocks):
        x = _inverted_residual(x, expansion, make_divisible(filters * alpha, 8), kernel if size == "k" else size,
                               stride, se_ratio if se else None, activation if act == "hs" else relu, block_id)
    last_conv_ch = make_divisible(x.shape[-1] * 6, 8)
    if alpha > 1.0:
        last_point_ch = make_divisible(last_point_ch * alpha, 8)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False, name="conv_1")(x)
    x = mobile_bn("conv_1_bn")(x)
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True, name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        x = layers.Activation(classifier_activation, name="predictions")(x)
    else:
        x = _graph.pooled(x, pooling, "avg_pool", "max_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def MobileNetV3Small(input_shape: Any = None, alpha: float = 1.0, minimalistic: bool = False,
                     include_top: bool = True, weights: Any = None, input_tensor: Any = None, classes: int = 1000,
                     pooling: str | None = None, dropout_rate: float = 0.2, classifier_activation: Any = "softmax",
                     include_preprocessing: bool = True, name: str = "MobileNetV3Small") -> Model:
    """MobileNetV3Small (``keras.applications.MobileNetV3Small``).

    Args:
        input_shape: ``(rows, cols, channels)``, sides at least 32 or ``None`` (default ``(None, None, 3)``:
            the top pools globally, so any size works).
        alpha: width multiplier (filters rounded to multiples of 8).
        minimalistic: 3x3 kernels, ReLU, no squeeze-and-excite.
        dropout_rate: dropout before the top's logits.
        include_preprocessing: start with ``Rescaling`` from [0, 255] to [-1, 1].
        include_top, weights, input_tensor, classes, pooling, classifier_activation, name: as
            :func:`ember.applications.ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.MobileNetV3Small(minimalistic=True, classes=5).output_shape
        (None, 5)
    """
    return build_mobilenet_v3("MobileNetV3Small", SMALL, 1024, input_shape, alpha, minimalistic, include_top,
                              weights, input_tensor, classes, pooling, dropout_rate, classifier_activation,
                              include_preprocessing, name)


def MobileNetV3Large(input_shape: Any = None, alpha: float = 1.0, minimalistic: bool = False,
                     include_top: bool = True, weights: Any = None, input_tensor: Any = None, classes: int = 1000,
                     pooling: str | None = None, dropout_rate: float = 0.2, classifier_activation: Any = "softmax",
                     include_preprocessing: bool = True, name: str = "MobileNetV3Large") -> Model:
    """MobileNetV3Large (``keras.applications.MobileNetV3Large``); arguments as :func:`MobileNetV3Small`.

    Example:
        >>> from ember import applications
        >>> applications.MobileNetV3Large(include_top=False, pooling="avg").output_shape
        (None, 960)
    """
    return build_mobilenet_v3("MobileNetV3Large", LARGE, 1280, input_shape, alpha, minimalistic, include_top,
                              weights, input_tensor, classes, pooling, dropout_rate, classifier_activation,
                              include_preprocessing, name)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The input unchanged: MobileNetV3 rescales inside the model (``include_preprocessing``)."""
    return x


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
