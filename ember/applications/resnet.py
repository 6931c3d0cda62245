"""ResNet50, ResNet101 and ResNet152 (He et al. 2015), with Keras 3's layer graph and names.

Keras weight files of these models load by layer order (``weights="<path>"``); the residual
blocks of both versions (V1 here, V2 in :mod:`ember.applications.resnet_v2`) live here.

Example:
    >>> import ember
    >>> from ember.applications import resnet
    >>> ember.set_backend("numpy")
    >>> model = resnet.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
    >>> model.output_shape, model.count_params()
    ((None, 10), 23608202)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import RESNET_EPSILON, bn_act, conv_bn
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.applications.imagenet_utils import preprocess_input as _preprocess
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# Blocks per stage (conv2..conv5) of each depth.
STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
STAGE_FILTERS = (64, 128, 256, 512)


def block_v1(x: SymbolicTensor, filters: int, stride: int = 1, conv_shortcut: bool = True,
             name: str = "") -> SymbolicTensor:
    """A bottleneck block with post-activation (ResNet V1): 1x1, 3x3, 1x1 convolutions, each batch-normalised."""
    if conv_shortcut:
        shortcut = conv_bn(x, 4 * filters, 1, f"{name}_0", strides=stride)
    else:
        shortcut = x
    x = conv_bn(x, filters, 1, f"{name}_1", strides=stride, activation="relu")
    x = conv_bn(x, filters, 3, f"{name}_2", padding="same", activation="relu")
    x = conv_bn(x, 4 * filters, 1, f"{name}_3")
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_v1(x: SymbolicTensor, filters: int, blocks: int, stride1: int = 2, name: str = "") -> SymbolicTensor:
    """``blocks`` V1 blocks, the first with a projection shortcut and stride ``stride1``."""
    x = block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def block_v2(x: SymbolicTensor, filters: int, stride: int = 1, conv_shortcut: bool = False,
             name: str = "") -> SymbolicTensor:
    """A bottleneck block with pre-activation (ResNet V2); the stride sits on the 3x3 convolution."""
    preact = bn_act(x, name, bn_name=f"{name}_preact_bn", act_name=f"{name}_preact_relu")
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = conv_bn(preact, filters, 1, f"{name}_1", use_bias=False, activation="relu")
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = conv_bn(x, filters, 3, f"{name}_2", strides=stride, use_bias=False, activation="relu")
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def stack_v2(x: SymbolicTensor, filters: int, blocks: int, stride1: int = 2, name: str = "") -> SymbolicTensor:
    """``blocks`` V2 blocks: a projection first, the stride ``stride1`` on the last."""
    x = block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = block_v2(x, filters, name=f"{name}_block{i}")
    return block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def build_resnet(family: str, stack_fn: Callable[[SymbolicTensor], SymbolicTensor], preact: bool,
                 include_top: bool, weights: Any, input_tensor: Any, input_shape: Any, pooling: Any,
                 classes: int, classifier_activation: Any, name: str) -> Model:
    """The stem, ``stack_fn``'s stages and the head of a ResNet (V1 when ``preact`` is False, else V2)."""
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=224, min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(image)
    x = layers.Conv2D(64, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    if not preact:
        x = bn_act(x, "conv1")
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=-1, epsilon=RESNET_EPSILON, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation, top_name="avg_pool",
                               avg_name="avg_pool", max_name="max_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def _stages_v1(depth: int) -> Callable[[SymbolicTensor], SymbolicTensor]:
    def stages(x: SymbolicTensor) -> SymbolicTensor:
        for i, (filters, blocks) in enumerate(zip(STAGE_FILTERS, STAGES[depth])):
            x = stack_v1(x, filters, blocks, stride1=1 if i == 0 else 2, name=f"conv{i + 2}")
        return x
    return stages


def ResNet50(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
             pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
             name: str = "resnet50") -> Model:
    """ResNet50 (Keras's ``keras.applications.ResNet50``): 50 layers, bottleneck blocks (3, 4, 6, 3).

    Args:
        include_top: end with global average pooling and a ``classes``-way ``Dense`` ("predictions").
        weights: ``None`` (random initialization, built when first used) or the path of a local weights
            file (Keras ``.weights.h5``/``.keras`` of the same architecture, or an Ember checkpoint).
            ``"imagenet"`` is refused: Ember downloads nothing.
        input_tensor: a symbolic tensor to use as the image input.
        input_shape: ``(rows, cols, channels)``, sides at least 32; default ``(224, 224, 3)`` with the top,
            ``(None, None, 3)`` without.
        pooling: without the top: ``None`` (4-D features), ``"avg"`` or ``"max"`` (global pooling).
        classes: the number of classes of the top.
        classifier_activation: the top's activation (``None`` for logits).
        name: the model's name.

    Returns:
        A functional :class:`ember.Model`. Inputs are expected preprocessed by
        :func:`ember.applications.resnet.preprocess_input` (caffe mode).

    Example:
        >>> from ember import applications
        >>> applications.ResNet50(include_top=False, input_shape=(32, 32, 3), pooling="avg").output_shape
        (None, 2048)
    """
    return build_resnet("ResNet50", _stages_v1(50), False, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def ResNet101(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
              pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
              name: str = "resnet101") -> Model:
    """ResNet101: bottleneck blocks (3, 4, 23, 3); arguments as :func:`ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.ResNet101(input_shape=(32, 32, 3), classes=10).output_shape
        (None, 10)
    """
    return build_resnet("ResNet101", _stages_v1(101), False, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def ResNet152(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
              pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
              name: str = "resnet152") -> Model:
    """ResNet152: bottleneck blocks (3, 8, 36, 3); arguments as :func:`ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.ResNet152(include_top=False).output_shape
        (None, None, None, 2048)
    """
    return build_resnet("ResNet152", _stages_v1(152), False, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Images in [0, 255] (RGB) as ResNet expects them: BGR, each channel centred on ImageNet's mean."""
    return _preprocess(x, data_format=data_format, mode="caffe")


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
