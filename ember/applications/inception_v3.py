"""InceptionV3 (Szegedy et al. 2015), with Keras 3's layer graph and names (``mixed0`` .. ``mixed10``).

Example:
    >>> import ember
    >>> from ember.applications import inception_v3
    >>> ember.set_backend("numpy")
    >>> inception_v3.InceptionV3(include_top=False, input_shape=(75, 75, 3), pooling="avg").output_shape
    (None, 2048)
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import named
from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.inception_v3.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor


def conv2d_bn(x: SymbolicTensor, filters: int, rows: int, cols: int, padding: str = "same",
              strides: tuple = (1, 1), name: str | None = None) -> SymbolicTensor:
    """Conv2D (no bias) -> BatchNormalization (no scale) -> ReLU; named ``<name>_conv``/``_bn``/``<name>``."""
    x = layers.Conv2D(filters, (rows, cols), strides=strides, padding=padding, use_bias=False,
                      **named(None if name is None else f"{name}_conv"))(x)
    x = layers.BatchNormalization(axis=-1, scale=False, **named(None if name is None else f"{name}_bn"))(x)
    return layers.Activation("relu", **named(name))(x)


def _chain(x: SymbolicTensor, convs: tuple) -> SymbolicTensor:
    """``x`` through ``conv2d_bn`` for each ``(filters, rows, cols)`` (or with padding and strides) in turn."""
    for conv in convs:
        x = conv2d_bn(x, *conv)
    return x


def _avg_branch(x: SymbolicTensor, filters: int) -> SymbolicTensor:
    x = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(x, filters, 1, 1)


def _block_35(x: SymbolicTensor, pool_filters: int, name: str) -> SymbolicTensor:
    """mixed0-2: 1x1, 5x5, double 3x3 and pooled branches."""
    branches = [_chain(x, ((64, 1, 1),)), _chain(x, ((48, 1, 1), (64, 5, 5))),
                _chain(x, ((64, 1, 1), (96, 3, 3), (96, 3, 3))), _avg_branch(x, pool_filters)]
    return layers.Concatenate(axis=-1, name=name)(branches)


def _block_17(x: SymbolicTensor, width: int, name: str) -> SymbolicTensor:
    """mixed4-7: 1x1, factorised 7x7, double factorised 7x7 and pooled branches."""
    branches = [_chain(x, ((192, 1, 1),)), _chain(x, ((width, 1, 1), (width, 1, 7), (192, 7, 1))),
                _chain(x, ((width, 1, 1), (width, 7, 1), (width, 1, 7), (width, 7, 1), (192, 1, 7))),
                _avg_branch(x, 192)]
    return layers.Concatenate(axis=-1, name=name)(branches)


def _block_8(x: SymbolicTensor, i: int) -> SymbolicTensor:
    """mixed9-10: 1x1, split 3x3, split double 3x3 and pooled branches."""
    branch1x1 = conv2d_bn(x, 320, 1, 1)
    branch3x3 = conv2d_bn(x, 384, 1, 1)
    branch3x3 = layers.Concatenate(axis=-1, name=f"mixed9_{i}")(
        [conv2d_bn(branch3x3, 384, 1, 3), conv2d_bn(branch3x3, 384, 3, 1)])
    double = _chain(x, ((448, 1, 1), (384, 3, 3)))
    double = layers.Concatenate(axis=-1)([conv2d_bn(double, 384, 1, 3), conv2d_bn(double, 384, 3, 1)])
    return layers.Concatenate(axis=-1, name=f"mixed{9 + i}")([branch1x1, branch3x3, double, _avg_branch(x, 192)])


def InceptionV3(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "inception_v3") -> Model:
    """InceptionV3 (``keras.applications.InceptionV3``): default input 299x299, sides at least 75.

    Arguments as :func:`ember.applications.ResNet50`; inputs in [-1, 1] (:func:`preprocess_input`).

    Example:
        >>> from ember import applications
        >>> applications.InceptionV3(include_top=False, input_shape=(75, 75, 3)).output_shape
        (None, 1, 1, 2048)
    """
    family = "InceptionV3"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=299, min_size=75, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = _chain(image, ((32, 3, 3, "valid", (2, 2)), (32, 3, 3, "valid"), (64, 3, 3)))
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = _chain(x, ((80, 1, 1, "valid"), (192, 3, 3, "valid")))
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _block_35(x, pool_filters, f"mixed{i}")
    branches = [conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid"),
                _chain(x, ((64, 1, 1), (96, 3, 3), (96, 3, 3, "valid", (2, 2)))),
                layers.MaxPooling2D((3, 3), strides=(2, 2))(x)]
    x = layers.Concatenate(axis=-1, name="mixed3")(branches)
    for i, width in enumerate((128, 160, 160, 192)):
        x = _block_17(x, width, f"mixed{4 + i}")
    branches = [_chain(x, ((192, 1, 1), (320, 3, 3, "valid", (2, 2)))),
                _chain(x, ((192, 1, 1), (192, 1, 7), (192, 7, 1), (192, 3, 3, "valid", (2, 2)))),
                layers.MaxPooling2D((3, 3), strides=(2, 2))(x)]
    x = layers.Concatenate(axis=-1, name="mixed8")(branches)
    for i in range(2):
        x = _block_8(x, i)
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation, top_name="avg_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
