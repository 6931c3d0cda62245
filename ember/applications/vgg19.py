"""VGG19 (``keras.applications.VGG19``), with Keras 3's layer graph and names.

Example:
    >>> import ember
    >>> from ember.applications import vgg19
    >>> ember.set_backend("numpy")
    >>> vgg19.VGG19(include_top=False, input_shape=(32, 32, 3), pooling="avg").output_shape
    (None, 512)
"""

from __future__ import annotations

from typing import Any

from ember.applications._vgg import build_vgg
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.applications.imagenet_utils import preprocess_input as _preprocess
from ember.models.model import Model


def VGG19(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
          pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
          name: str = "vgg19") -> Model:
    """VGG19: 19 weight layers; arguments as :func:`ember.applications.ResNet50`.

    With the top the input size is fixed (``Flatten`` then 4096-unit ``Dense`` layers). Inputs are
    expected preprocessed by :func:`preprocess_input` (caffe mode).

    Example:
        >>> from ember import applications
        >>> applications.VGG19(include_top=False, pooling="avg").output_shape
        (None, 512)
    """
    return build_vgg(19, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
                     name)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Images in [0, 255] (RGB) as VGG expects them: BGR, each channel centred on ImageNet's mean."""
    return _preprocess(x, data_format=data_format, mode="caffe")


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
