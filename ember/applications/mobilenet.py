"""MobileNet (Howard et al. 2017): depthwise-separable convolutions, with Keras 3's layer graph and names.

Example:
    >>> import ember
    >>> from ember.applications import mobilenet
    >>> ember.set_backend("numpy")
    >>> model = mobilenet.MobileNet(input_shape=(32, 32, 3), alpha=0.25, classes=10)
    >>> model.name, model.output_shape
    ('mobilenet_0.25_32', (None, 10))
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.mobilenet.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# (pointwise filters, stride) of the 13 depthwise-separable blocks.
BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
          (512, 1), (1024, 2), (1024, 1))
IMAGENET_SIZES = (128, 160, 192, 224)


def _separable_block(x: SymbolicTensor, filters: int, alpha: float, depth_multiplier: int, stride: int,
                     block_id: int) -> SymbolicTensor:
    """Depthwise 3x3 -> BN -> ReLU6 -> pointwise 1x1 -> BN -> ReLU6 (``conv_dw_<i>``, ``conv_pw_<i>``)."""
    if stride != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid", depth_multiplier=depth_multiplier,
                               strides=stride, use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False, name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def default_size(input_shape: Any, sizes: tuple) -> int:
    """The default square size: the given one when square and in ``sizes`` (the ImageNet variants), else 224."""
    if input_shape is not None and len(tuple(input_shape)) == 3:
        rows, cols = tuple(input_shape)[:2]
        if rows == cols and rows in sizes:
            return int(rows)
    return 224


def MobileNet(input_shape: Any = None, alpha: float = 1.0, depth_multiplier: int = 1, dropout: float = 1e-3,
              include_top: bool = True, weights: Any = None, input_tensor: Any = None, pooling: str | None = None,
              classes: int = 1000, classifier_activation: Any = "softmax", name: str | None = None) -> Model:
    """MobileNet (``keras.applications.MobileNet``).

    Args:
        input_shape: ``(rows, cols, channels)``, sides at least 32 (default ``(224, 224, 3)``).
        alpha: width multiplier of every layer's filters.
        depth_multiplier: the depthwise convolutions' channel multiplier.
        dropout: the dropout rate before the top's 1x1 convolution.
        include_top, weights, input_tensor, pooling, classes, classifier_activation: as
            :func:`ember.applications.ResNet50`.
        name: default ``mobilenet_<alpha>_<rows>``.

    Returns:
        A functional :class:`ember.Model`; inputs in [-1, 1] (:func:`preprocess_input`).

    Example:
        >>> from ember import applications
        >>> applications.MobileNet(input_shape=(128, 128, 3), alpha=0.5).name
        'mobilenet_0.50_128'
    """
    family = "MobileNet"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=default_size(input_shape, IMAGENET_SIZES),
                                  min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = layers.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2), name="conv1")(image)
    x = layers.BatchNormalization(axis=-1, name="conv1_bn")(x)
    x = layers.ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(BLOCKS, start=1):
        x = _separable_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        x = layers.Activation(classifier_activation, name="predictions")(x)
    else:
        x = _graph.pooled(x, pooling)
    if name is None:
        name = f"mobilenet_{alpha:0.2f}_{shape[0]}"
    return _graph.finish(family, image, input_tensor, x, name, weights)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
