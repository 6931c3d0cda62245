"""DenseNet121, DenseNet169 and DenseNet201 (Huang et al. 2016), with Keras 3's layer graph and names.

Example:
    >>> import ember
    >>> from ember.applications import densenet
    >>> ember.set_backend("numpy")
    >>> densenet.DenseNet121(input_shape=(32, 32, 3), classes=10).count_params()
    7047754
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._blocks import bn_act
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.applications.imagenet_utils import preprocess_input as _preprocess
from ember.models.model import Model
from ember.symbolic import SymbolicTensor

# Convolution blocks in each of the four dense blocks, by depth.
DENSE_BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}
GROWTH_RATE = 32


def _conv_block(x: SymbolicTensor, name: str) -> SymbolicTensor:
    """BN-ReLU-1x1 conv (4 x growth) -> BN-ReLU-3x3 conv (growth), concatenated to ``x``."""
    y = bn_act(x, f"{name}_0")
    y = layers.Conv2D(4 * GROWTH_RATE, 1, use_bias=False, name=f"{name}_1_conv")(y)
    y = bn_act(y, f"{name}_1")
    y = layers.Conv2D(GROWTH_RATE, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(y)
    return layers.Concatenate(axis=-1, name=f"{name}_concat")([x, y])


def _transition(x: SymbolicTensor, reduction: float, name: str) -> SymbolicTensor:
    """BN-ReLU-1x1 conv (channels x ``reduction``) -> 2x2 average pooling."""
    x = bn_act(x, name)
    x = layers.Conv2D(int(x.shape[-1] * reduction), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def build_densenet(family: str, blocks: tuple, include_top: bool, weights: Any, input_tensor: Any, input_shape: Any,
                   pooling: Any, classes: int, classifier_activation: Any, name: str) -> Model:
    """The stem, dense blocks of ``blocks`` convolution blocks with transitions between them, and the head."""
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=224, min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(image)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = bn_act(x, "conv1")
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, count in enumerate(blocks, start=2):
        for i in range(1, count + 1):
            x = _conv_block(x, f"conv{stage}_block{i}")
        if stage < len(blocks) + 1:
            x = _transition(x, 0.5, f"pool{stage}")
    x = bn_act(x, "", bn_name="bn", act_name="relu")
    x = _graph.classifier_head(x, include_top, pooling, classes, classifier_activation, top_name="avg_pool",
                               avg_name="avg_pool", max_name="max_pool")
    return _graph.finish(family, image, input_tensor, x, name, weights)


def DenseNet121(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "densenet121") -> Model:
    """DenseNet121 (``keras.applications.DenseNet121``); arguments as :func:`ember.applications.ResNet50`.

    Inputs are expected preprocessed by :func:`preprocess_input` (torch mode).

    Example:
        >>> from ember import applications
        >>> applications.DenseNet121(include_top=False, pooling="avg").output_shape
        (None, 1024)
    """
    return build_densenet("DenseNet121", DENSE_BLOCKS[121], include_top, weights, input_tensor, input_shape,
                          pooling, classes, classifier_activation, name)


def DenseNet169(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "densenet169") -> Model:
    """DenseNet169; arguments as :func:`ember.applications.ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.DenseNet169(include_top=False, pooling="avg").output_shape
        (None, 1664)
    """
    return build_densenet("DenseNet169", DENSE_BLOCKS[169], include_top, weights, input_tensor, input_shape,
                          pooling, classes, classifier_activation, name)


def DenseNet201(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "densenet201") -> Model:
    """DenseNet201; arguments as :func:`ember.applications.ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.DenseNet201(include_top=False, pooling="avg").output_shape
        (None, 1920)
    """
    return build_densenet("DenseNet201", DENSE_BLOCKS[201], include_top, weights, input_tensor, input_shape,
                          pooling, classes, classifier_activation, name)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Images in [0, 255] scaled to [0, 1], then normalised by ImageNet's channel mean and std (torch mode)."""
    return _preprocess(x, data_format=data_format, mode="torch")


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
