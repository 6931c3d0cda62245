"""EfficientNetB0 to B7 (Tan & Le 2019), with Keras 3's layer graph and names.

The models take pixels in [0, 255]: their stem rescales to [0, 1] and normalises with a
``Normalization`` layer whose statistics are weights (ImageNet's in Keras's files), so
:func:`preprocess_input` returns its input unchanged. Keras adds one more weightless layer to a
model built with ``weights="imagenet"`` (``Rescaling`` by ``1 / sqrt(std)``: its files store the
standard deviation where the variance belongs); Ember recognises those statistics in a loaded file
and adds the same layer, so a file saved from Keras's ImageNet model gives Keras's outputs.

Example:
    >>> import ember
    >>> from ember.applications import efficientnet
    >>> ember.set_backend("numpy")
    >>> efficientnet.EfficientNetB0(input_shape=(32, 32, 3), classes=10).count_params()
    4062381
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import layers, ops
from ember.applications import _args, _graph
from ember.applications._blocks import correct_pad, make_divisible
from ember.applications._normalization import Normalization
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# (kernel, repeats, filters in, filters out, expand ratio, stride, squeeze-excite ratio) of the 7 stages.
STAGES = ((3, 1, 32, 16, 1, 1, 0.25), (3, 2, 16, 24, 6, 2, 0.25), (5, 2, 24, 40, 6, 2, 0.25),
          (3, 3, 40, 80, 6, 2, 0.25), (5, 3, 80, 112, 6, 1, 0.25), (5, 4, 112, 192, 6, 2, 0.25),
          (3, 1, 192, 320, 6, 1, 0.25))
# Keras's initializers (they matter only for weights=None).
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}
IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)
# (width, depth, default size, dropout) of B0..B7.
VARIANTS = {0: (1.0, 1.0, 224, 0.2), 1: (1.0, 1.1, 240, 0.2), 2: (1.1, 1.2, 260, 0.3), 3: (1.2, 1.4, 300, 0.3),
            4: (1.4, 1.8, 380, 0.4), 5: (1.6, 2.2, 456, 0.4), 6: (1.8, 2.6, 528, 0.5), 7: (2.0, 3.1, 600, 0.5)}


def squeeze_excite(x: SymbolicTensor, filters: int, filters_se: int, activation: str, name: str) -> SymbolicTensor:
    """Squeeze-and-excite: ``x`` times a sigmoid gate computed from its global average (``<name>se_*``)."""
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation, kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_expand")(se)
    return layers.Multiply(name=f"{name}se_excite")([x, se])


def mbconv(x: SymbolicTensor, activation: str, drop_rate: float, name: str, filters_in: int, filters_out: int,
           kernel_size: int, strides: int, expand_ratio: int, se_ratio: float) -> SymbolicTensor:
    """A mobile inverted bottleneck with squeeze-and-excite (Keras's ``efficientnet.block``)."""
    inputs = x
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                          name=f"{name}expand_conv")(x)
        x = layers.BatchNormalization(axis=-1, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    if strides == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x.shape, kernel_size), name=f"{name}dwconv_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding="valid" if strides == 2 else "same",
                               use_bias=False, depthwise_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=-1, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        x = squeeze_excite(x, filters, max(1, int(filters_in * se_ratio)), activation, name)
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=-1, name=f"{name}project_bn")(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.Add(name=f"{name}add")([x, inputs])
    return x


def top(x: SymbolicTensor, activation: Any, include_top: bool, dropout_rate: float, classes: int,
        classifier_activation: Any, pooling: str | None) -> SymbolicTensor:
    """EfficientNet's and EfficientNetV2's end, after ``top_bn``: the activation, then the classifier
    (average pooling, dropout, ``predictions``) with the top, else ``pooling``."""
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        return layers.Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                            name="predictions")(x)
    return _graph.pooled(x, pooling, "avg_pool", "max_pool")


def _graph_of(variant: int, include_top: bool, input_tensor: Any, shape: tuple, pooling: Any, classes: int,
              classifier_activation: Any, imagenet_rescaling: bool) -> tuple[SymbolicTensor, SymbolicTensor]:
    width, depth, _, dropout_rate = VARIANTS[variant]
    drop_connect_rate, activation = 0.2, "swish"

    def round_filters(filters: int) -> int:
        return make_divisible(filters * width, 8)

    def round_repeats(repeats: int) -> int:
        return int(math.ceil(depth * repeats))

    image = _graph.image_input(f"EfficientNetB{variant}", input_tensor, shape)
    x = layers.Rescaling(1.0 / 255.0)(image)
    x = Normalization()(x)
    if imagenet_rescaling:
        x = layers.Rescaling([1.0 / math.sqrt(stddev) for stddev in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=correct_pad(x.shape, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=-1, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    total = float(sum(round_repeats(stage[1]) for stage in STAGES))
    count = 0
    for i, (kernel, repeats, filters_in, filters_out, expand, stride, se_ratio) in enumerate(STAGES):
        filters_in, filters_out = round_filters(filters_in), round_filters(filters_out)
        for j in range(round_repeats(repeats)):
            if j > 0:
                stride, filters_in = 1, filters_out
            x = mbconv(x, activation, drop_connect_rate * count / total, f"block{i + 1}{chr(j + 97)}_", filters_in,
                       filters_out, kernel, stride, expand, se_ratio)
            count += 1
    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="top_conv")(x)
    x = layers.BatchNormalization(axis=-1, name="top_bn")(x)
    x = top(x, activation, include_top, dropout_rate, classes, classifier_activation, pooling)
    return image, x


def has_imagenet_statistics(model: Model) -> bool:
    """Whether the model's stem ``Normalization`` holds Keras's ImageNet statistics (std stored as variance)."""
    for buffers in model.state["buffers"].values():
        if set(buffers) == {"mean", "variance", "count"}:  # the stem's Normalization
            variance = np.asarray(ops.to_numpy(buffers["variance"]), dtype=np.float64)
            return variance.shape == (3,) and bool(np.allclose(variance, IMAGENET_STDDEV_RGB, rtol=1e-6, atol=0.0))
    return False


def build_efficientnet(variant: int, include_top: bool, weights: Any, input_tensor: Any, input_shape: Any,
                       pooling: Any, classes: int, classifier_activation: Any, name: str) -> Model:
    """EfficientNet-B``variant``: builds the graph, loads ``weights`` (adding Keras's ImageNet rescaling if needed)."""
    family = f"EfficientNetB{variant}"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=VARIANTS[variant][2], min_size=32,
                                  include_top=include_top)
    parts = (variant, include_top, input_tensor, shape, pooling, classes, classifier_activation)
    image, x = _graph_of(*parts, imagenet_rescaling=False)
    model = _graph.finish(family, image, input_tensor, x, name, weights)
    if weights is not None and has_imagenet_statistics(model):
        image, x = _graph_of(*parts, imagenet_rescaling=True)
        model = _graph.finish(family, image, input_tensor, x, name, weights)
    return model


def _constructor(variant: int) -> Any:
    def constructor(include_top: bool = True, weights: Any = None, input_tensor: Any = None,
                    input_shape: Any = None, pooling: str | None = None, classes: int = 1000,
                    classifier_activation: Any = "softmax", name: str = f"efficientnetb{variant}") -> Model:
        return build_efficientnet(variant, include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, name)
    width, depth, size, dropout = VARIANTS[variant]
    constructor.__name__ = constructor.__qualname__ = f"EfficientNetB{variant}"
    constructor.__doc__ = (
        f"EfficientNetB{variant} (``keras.applications.EfficientNetB{variant}``): width x{width}, depth x{depth}, "
        f"default input {size}x{size}, top dropout {dropout}.\n\n"
        f"    Arguments as :func:`ember.applications.ResNet50`; inputs are pixels in [0, 255] (the model\n"
        f"    rescales and normalises them itself).\n\n"
        f"    Example:\n"
        f"        >>> from ember import applications\n"
        f"        >>> applications.EfficientNetB{variant}(include_top=False, input_shape=(32, 32, 3)).name\n"
        f"        'efficientnetb{variant}'\n")
    return constructor


EfficientNetB0 = _constructor(0)
EfficientNetB1 = _constructor(1)
EfficientNetB2 = _constructor(2)
EfficientNetB3 = _constructor(3)
EfficientNetB4 = _constructor(4)
EfficientNetB5 = _constructor(5)
EfficientNetB6 = _constructor(6)
EfficientNetB7 = _constructor(7)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The input unchanged: EfficientNet rescales and normalises inside the model."""
    return x


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
