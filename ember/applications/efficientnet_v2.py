"""EfficientNetV2 B0-B3, S, M and L (Tan & Le 2021), with Keras 3's layer graph and names.

The models take pixels in [0, 255] and preprocess them themselves (``include_preprocessing``):
the B variants rescale to [0, 1] and normalise with ImageNet's statistics, S/M/L rescale to
[-1, 1]; :func:`preprocess_input` returns its input unchanged.

Example:
    >>> import ember
    >>> from ember.applications import efficientnet_v2
    >>> ember.set_backend("numpy")
    >>> efficientnet_v2.EfficientNetV2B0(input_shape=(32, 32, 3), classes=10).count_params()
    5932122
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications.efficientnet import CONV_KERNEL_INITIALIZER, squeeze_excite, top
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# (kernel, repeats, filters in, filters out, expand ratio, squeeze-excite ratio, stride, fused) of each stage.
_B = ((3, 1, 32, 16, 1, 0, 1, True), (3, 2, 16, 32, 4, 0, 2, True), (3, 2, 32, 48, 4, 0, 2, True),
      (3, 3, 48, 96, 4, 0.25, 2, False), (3, 5, 96, 112, 6, 0.25, 1, False), (3, 8, 112, 192, 6, 0.25, 2, False))
STAGES = {
    "b0": _B, "b1": _B, "b2": _B, "b3": _B,
    "s": ((3, 2, 24, 24, 1, 0, 1, True), (3, 4, 24, 48, 4, 0, 2, True), (3, 4, 48, 64, 4, 0, 2, True),
          (3, 6, 64, 128, 4, 0.25, 2, False), (3, 9, 128, 160, 6, 0.25, 1, False),
          (3, 15, 160, 256, 6, 0.25, 2, False)),
    "m": ((3, 3, 24, 24, 1, 0, 1, True), (3, 5, 24, 48, 4, 0, 2, True), (3, 5, 48, 80, 4, 0, 2, True),
          (3, 7, 80, 160, 4, 0.25, 2, False), (3, 14, 160, 176, 6, 0.25, 1, False),
          (3, 18, 176, 304, 6, 0.25, 2, False), (3, 5, 304, 512, 6, 0.25, 1, False)),
    "l": ((3, 4, 32, 32, 1, 0, 1, True), (3, 7, 32, 64, 4, 0, 2, True), (3, 7, 64, 96, 4, 0, 2, True),
          (3, 10, 96, 192, 4, 0.25, 2, False), (3, 19, 192, 224, 6, 0.25, 1, False),
          (3, 25, 224, 384, 6, 0.25, 2, False), (3, 7, 384, 640, 6, 0.25, 1, False)),
}
# (width, depth, default size) of each variant.
VARIANTS = {"b0": (1.0, 1.0, 224), "b1": (1.0, 1.1, 240), "b2": (1.1, 1.2, 260), "b3": (1.2, 1.4, 300),
            "s": (1.0, 1.0, 384), "m": (1.0, 1.0, 480), "l": (1.0, 1.0, 480)}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_VARIANCE = (0.229 ** 2, 0.224 ** 2, 0.225 ** 2)
BN_MOMENTUM = 0.9


def round_filters(filters: float, width: float, divisor: int = 8) -> int:
    """``filters * width`` rounded to a multiple of ``divisor`` (at least ``divisor``)."""
    filters *= width
    return int(max(divisor, int(filters + divisor / 2) // divisor * divisor))



def mbconv_v2(x: SymbolicTensor, filters_in: int, filters_out: int, expand_ratio: int, kernel_size: int,
              strides: int, se_ratio: float, activation: str, drop_rate: float, name: str,
              fused: bool) -> SymbolicTensor:
    """An (optionally fused) mobile inverted bottleneck, Keras's ``MBConvBlock``/``FusedMBConvBlock``."""
    inputs = x
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        kernel, stride = (kernel_size, strides) if fused else (1, 1)
        x = layers.Conv2D(filters, kernel_size=kernel, strides=stride, kernel_initializer=CONV_KERNEL_INITIALIZER,
                          padding="same", use_bias=False, name=f"{name}expand_conv")(x)
        x = layers.BatchNormalization(axis=-1, momentum=BN_MOMENTUM, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    if not fused:
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, strides=strides, padding="same", use_bias=False,
                                   depthwise_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}dwconv2")(x)
        x = layers.BatchNormalization(axis=-1, momentum=BN_MOMENTUM, name=f"{name}bn")(x)
        x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        x = squeeze_excite(x, filters, max(1, int(filters_in * se_ratio)), activation, name)
    project_kernel, project_stride = (kernel_size, strides) if fused and expand_ratio == 1 else (1, 1)
    x = layers.Conv2D(filters_out, kernel_size=project_kernel, strides=project_stride,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=-1, momentum=BN_MOMENTUM, name=f"{name}project_bn")(x)
    if fused and expand_ratio == 1:
        x = layers.Activation(activation, name=f"{name}project_activation")(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.Add(name=f"{name}add")([x, inputs])
    return x


def build_efficientnet_v2(variant: str, include_top: bool, weights: Any, input_tensor: Any, input_shape: Any,
                          pooling: Any, classes: int, classifier_activation: Any, include_preprocessing: bool,
                          name: str) -> Model:
    """EfficientNetV2-``variant`` (``"b0"``..``"b3"``, ``"s"``, ``"m"``, ``"l"``)."""
    family = f"EfficientNetV2{variant.upper()}"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    width, depth, size = VARIANTS[variant]
    shape = _args.input_shape_for(family, input_shape, default_size=size, min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    activation, dropout_rate, drop_connect_rate = "swish", 0.2, 0.2
    x = image
    if include_preprocessing:
        if variant.startswith("b") and image.shape[-1] == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=list(IMAGENET_MEAN), variance=list(IMAGENET_VARIANCE), axis=-1)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)
    stages = STAGES[variant]
    x = layers.Conv2D(round_filters(stages[0][2], width), kernel_size=3, strides=2,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=-1, momentum=BN_MOMENTUM, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    repeats = [int(-(-depth * stage[1] // 1)) for stage in stages]  # ceil(depth * repeats)
    total, count = float(sum(repeats)), 0
    for i, ((kernel, _, filters_in, filters_out, expand, se_ratio, stride, fused), times) in enumerate(
            zip(stages, repeats)):
        filters_in, filters_out = round_filters(filters_in, width), round_filters(filters_out, width)
        for j in range(times):
            if j > 0:
                stride, filters_in = 1, filters_out
            x = mbconv_v2(x, filters_in, filters_out, expand, kernel, stride, se_ratio, activation,
                          drop_connect_rate * count / total, f"block{i + 1}{chr(j + 97)}_", fused)
            count += 1
    x = layers.Conv2D(round_filters(1280, width), kernel_size=1, strides=1, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      padding="same", use_bias=False, name="top_conv")(x)
    x = layers.BatchNormalization(axis=-1, momentum=BN_MOMENTUM, name="top_bn")(x)
    x = top(x, activation, include_top, dropout_rate, classes, classifier_activation, pooling)
    return _graph.finish(family, image, input_tensor, x, name, weights)


def _constructor(variant: str) -> Any:
    def constructor(include_top: bool = True, weights: Any = None, input_tensor: Any = None,
                    input_shape: Any = None, pooling: str | None = None, classes: int = 1000,
                    classifier_activation: Any = "softmax", include_preprocessing: bool = True,
                    name: str = f"efficientnetv2-{variant}") -> Model:
        return build_efficientnet_v2(variant, include_top, weights, input_tensor, input_shape, pooling, classes,
                                     classifier_activation, include_preprocessing, name)
    width, depth, size = VARIANTS[variant]
    constructor.__name__ = constructor.__qualname__ = f"EfficientNetV2{variant.upper()}"
    constructor.__doc__ = (
        f"EfficientNetV2{variant.upper()} (``keras.applications.EfficientNetV2{variant.upper()}``): width x{width}, "
        f"depth x{depth}, default input {size}x{size}.\n\n"
        f"    Arguments as :func:`ember.applications.ResNet50`, plus ``include_preprocessing`` (the model's own\n"
        f"    input scaling from pixels in [0, 255]).\n\n"
        f"    Example:\n"
        f"        >>> from ember import applications\n"
        f"        >>> applications.EfficientNetV2{variant.upper()}(include_top=False, input_shape=(32, 32, 3)).name\n"
        f"        'efficientnetv2-{variant}'\n")
    return constructor


EfficientNetV2B0 = _constructor("b0")
EfficientNetV2B1 = _constructor("b1")
EfficientNetV2B2 = _constructor("b2")
EfficientNetV2B3 = _constructor("b3")
EfficientNetV2S = _constructor("s")
EfficientNetV2M = _constructor("m")
EfficientNetV2L = _constructor("l")


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The input unchanged: EfficientNetV2 preprocesses inside the model (``include_preprocessing``)."""
    return x


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
