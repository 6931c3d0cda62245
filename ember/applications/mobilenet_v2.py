"""MobileNetV2 (Sandler et al. 2018): inverted residual blocks, with Keras 3's layer graph and names.

Example:
    >>> import ember
    >>> from ember.applications import mobilenet_v2
    >>> ember.set_backend("numpy")
    >>> model = mobilenet_v2.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, classes=10)
    >>> model.name, model.output_shape
    ('mobilenetv2_0.35_32', (None, 10))
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import correct_pad, make_divisible, mobile_bn
from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.mobilenet_v2.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.applications.mobilenet import default_size
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# (filters, stride, expansion) of the 17 inverted residual blocks.
BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6), (64, 1, 6),
          (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6),
          (320, 1, 6))
IMAGENET_SIZES = (96, 128, 160, 192, 224)


def _inverted_residual(x: SymbolicTensor, expansion: int, stride: int, alpha: float, filters: int,
                       block_id: int) -> SymbolicTensor:
    """1x1 expansion (not in block 0) -> depthwise 3x3 -> 1x1 linear projection, residual when shapes allow."""
    inputs = x
    in_channels = x.shape[-1]
    out_channels = make_divisible(int(filters * alpha), 8)
    prefix = f"block_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False,
                          name=f"{prefix}expand")(x)
        x = mobile_bn(f"{prefix}expand_BN")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x.shape, 3), name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, use_bias=False,
                               padding="same" if stride == 1 else "valid", name=f"{prefix}depthwise")(x)
    x = mobile_bn(f"{prefix}depthwise_BN")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(out_channels, kernel_size=1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = mobile_bn(f"{prefix}project_BN")(x)
    if in_channels == out_channels and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def MobileNetV2(input_shape: Any = None, alpha: float = 1.0, include_top: bool = True, weights: Any = None,
                input_tensor: Any = None, pooling: str | None = None, classes: int = 1000,
                classifier_activation: Any = "softmax", name: str | None = None) -> Model:
    """MobileNetV2 (``keras.applications.MobileNetV2``).

    Args:
        input_shape: ``(rows, cols, channels)``, sides at least 32 (default ``(224, 224, 3)``).
        alpha: width multiplier (filters rounded to multiples of 8).
        include_top, weights, input_tensor, pooling, classes, classifier_activation: as
            :func:`ember.applications.ResNet50`.
        name: default ``mobilenetv2_<alpha>_<rows>``.

    Returns:
        A functional :class:`ember.Model`; inputs in [-1, 1] (:func:`preprocess_input`).

    Example:
        >>> from ember import applications
        >>> applications.MobileNetV2(include_top=False, alpha=0.35, pooling="avg").output_shape
        (None, 1280)
    """
    family = "MobileNetV2"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=default_size(input_shape, IMAGENET_SIZES),
                                  min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = layers.Conv2D(make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="Conv1")(image)
    x = mobile_bn("bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(BLOCKS):
        x = _inverted_residual(x, expansion, stride, alpha, filters, block_id)
    last = make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = mobile_bn("Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation)
    if name is None:
        name = f"mobilenetv2_{alpha:0.2f}_{shape[0]}"
    return _graph.finish(family, image, input_tensor, x, name, weights)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
