"""InceptionResNetV2 (Szegedy et al. 2016), with Keras 3's layer graph and names.

Example:
    >>> import ember
    >>> from ember.applications import inception_resnet_v2
    >>> ember.set_backend("numpy")
    >>> model = inception_resnet_v2.InceptionResNetV2(include_top=False, input_shape=(75, 75, 3), pooling="avg")
    >>> model.output_shape
    (None, 1536)
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import named
from ember.applications._custom_scale import CustomScaleLayer
from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.inception_resnet_v2.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# The branches of each residual block type: per branch, its (filters, kernel) convolutions.
BLOCKS = {
    "block35": (((32, 1),), ((32, 1), (32, 3)), ((32, 1), (48, 3), (64, 3))),
    "block17": (((192, 1),), ((128, 1), (160, (1, 7)), (192, (7, 1)))),
    "block8": (((192, 1),), ((192, 1), (224, (1, 3)), (256, (3, 1)))),
}


def conv2d_bn(x: SymbolicTensor, filters: int, kernel_size: Any, strides: int = 1, padding: str = "same",
              activation: str | None = "relu", use_bias: bool = False, name: str | None = None) -> SymbolicTensor:
    """Conv2D [-> BatchNormalization (no scale), without a bias] [-> Activation]: ``<name>``, ``_bn``, ``_ac``."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, **named(name))(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=-1, scale=False, **named(None if name is None else f"{name}_bn"))(x)
    if activation is not None:
        x = layers.Activation(activation, **named(None if name is None else f"{name}_ac"))(x)
    return x


def _branch(x: SymbolicTensor, convs: tuple) -> SymbolicTensor:
    for filters, kernel, *options in convs:
        x = conv2d_bn(x, filters, kernel, *options)
    return x


def residual_block(x: SymbolicTensor, scale: float, block_type: str, block_idx: int,
                   activation: str | None = "relu") -> SymbolicTensor:
    """An Inception-ResNet block: the branches, concatenated, projected by a 1x1 convolution, scaled, added."""
    name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=-1, name=f"{name}_mixed")([_branch(x, convs) for convs in BLOCKS[block_type]])
    up = conv2d_bn(mixed, x.shape[-1], 1, activation=None, use_bias=True, name=f"{name}_conv")
    x = CustomScaleLayer(scale=scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=f"{name}_ac")(x)
    return x


def InceptionResNetV2(include_top: bool = True, weights: Any = None, input_tensor: Any = None,
                      input_shape: Any = None, pooling: str | None = None, classes: int = 1000,
                      classifier_activation: Any = "softmax", name: str = "inception_resnet_v2") -> Model:
    """InceptionResNetV2 (``keras.applications.InceptionResNetV2``): default input 299x299, sides at least 75.

    Arguments as :func:`ember.applications.ResNet50`; inputs in [-1, 1] (:func:`preprocess_input`).

    Example:
        >>> from ember import applications
        >>> applications.InceptionResNetV2(input_shape=(75, 75, 3), classes=4).output_shape
        (None, 4)
    """
    family = "InceptionResNetV2"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=299, min_size=75, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = _branch(image, ((32, 3, 2, "valid"), (32, 3, 1, "valid"), (64, 3)))
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _branch(x, ((80, 1, 1, "valid"), (192, 3, 1, "valid")))
    x = layers.MaxPooling2D(3, strides=2)(x)
    branches = [_branch(x, ((96, 1),)), _branch(x, ((48, 1), (64, 5))), _branch(x, ((64, 1), (96, 3), (96, 3))),
                conv2d_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)]
    x = layers.Concatenate(axis=-1, name="mixed_5b")(branches)
    for block_idx in range(1, 11):
        x = residual_block(x, 0.17, "block35", block_idx)
    branches = [_branch(x, ((384, 3, 2, "valid"),)), _branch(x, ((256, 1), (256, 3), (384, 3, 2, "valid"))),
                layers.MaxPooling2D(3, strides=2, padding="valid")(x)]
    x = layers.Concatenate(axis=-1, name="mixed_6a")(branches)
    for block_idx in range(1, 21):
        x = residual_block(x, 0.1, "block17", block_idx)
    branches = [_branch(x, ((256, 1), (384, 3, 2, "valid"))), _branch(x, ((256, 1), (288, 3, 2, "valid"))),
                _branch(x, ((256, 1), (288, 3), (320, 3, 2, "valid"))),
                layers.MaxPooling2D(3, strides=2, padding="valid")(x)]
    x = layers.Concatenate(axis=-1, name="mixed_7a")(branches)
    for block_idx in range(1, 10):
        x = residual_block(x, 0.2, "block8", block_idx)
    x = residual_block(x, 1.0, "block8", 10, activation=None)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation, top_name="avg_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
