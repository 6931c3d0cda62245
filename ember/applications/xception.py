"""Xception (Chollet 2017): depthwise-separable convolutions with residual connections, Keras 3's graph.

Example:
    >>> import ember
    >>> from ember.applications import xception
    >>> ember.set_backend("numpy")
    >>> xception.Xception(include_top=False, input_shape=(71, 71, 3), pooling="max").output_shape
    (None, 2048)
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.xception.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor


def _sepconv_bn(x: SymbolicTensor, filters: int, name: str, act_before: bool) -> SymbolicTensor:
    """[ReLU ``<name>_act``] -> 3x3 ``SeparableConv2D`` ``<name>`` -> ``BatchNormalization`` ``<name>_bn``."""
    if act_before:
        x = layers.Activation("relu", name=f"{name}_act")(x)
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=f"{name}_bn")(x)


def _downsampling_block(x: SymbolicTensor, filters: tuple[int, int], residual_filters: int, block: int,
                        first_act: bool = True) -> SymbolicTensor:
    """Two separable convolutions and a strided max pooling, added to a strided 1x1 projection of ``x``."""
    residual = layers.Conv2D(residual_filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    residual = layers.BatchNormalization(axis=-1)(residual)
    x = _sepconv_bn(x, filters[0], f"block{block}_sepconv1", act_before=first_act)
    x = _sepconv_bn(x, filters[1], f"block{block}_sepconv2", act_before=True)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(x)
    return layers.Add()([x, residual])


def Xception(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
             pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
             name: str = "xception") -> Model:
    """Xception (``keras.applications.Xception``): default input 299x299, sides at least 71.

    Arguments as :func:`ember.applications.ResNet50`; inputs in [-1, 1] (:func:`preprocess_input`).

    Example:
        >>> from ember import applications
        >>> applications.Xception(classes=7, classifier_activation=None).output_shape
        (None, 7)
    """
    family = "Xception"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=299, min_size=71, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(image)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _downsampling_block(x, (128, 128), 128, 2, first_act=False)
    x = _downsampling_block(x, (256, 256), 256, 3)
    x = _downsampling_block(x, (728, 728), 728, 4)
    for block in range(5, 13):
        residual = x
        for conv in (1, 2, 3):
            x = _sepconv_bn(x, 728, f"block{block}_sepconv{conv}", act_before=True)
        x = layers.Add()([x, residual])
    x = _downsampling_block(x, (728, 1024), 1024, 13)
    for conv, filters in ((1, 1536), (2, 2048)):
        x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=f"block14_sepconv{conv}")(x)
        x = layers.BatchNormalization(axis=-1, name=f"block14_sepconv{conv}_bn")(x)
        x = layers.Activation("relu", name=f"block14_sepconv{conv}_act")(x)
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation, top_name="avg_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
