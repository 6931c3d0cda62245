"""ResNet50V2, ResNet101V2 and ResNet152V2 (He et al. 2016, pre-activation), with Keras 3's layer graph.

Example:
    >>> import ember
    >>> from ember.applications import resnet_v2
    >>> ember.set_backend("numpy")
    >>> model = resnet_v2.ResNet50V2(input_shape=(32, 32, 3), classes=10)
    >>> model.output_shape, model.count_params()
    ((None, 10), 23585290)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.applications._tf_mode import preprocess_input  # noqa: F401  (keras.applications.resnet_v2.preprocess_input)
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.applications.resnet import STAGE_FILTERS, STAGES, build_resnet, stack_v2
from ember.models.model import Model
from ember.symbolic import SymbolicTensor


def _stages_v2(depth: int) -> Callable[[SymbolicTensor], SymbolicTensor]:
    def stages(x: SymbolicTensor) -> SymbolicTensor:
        last = len(STAGE_FILTERS) - 1
        for i, (filters, blocks) in enumerate(zip(STAGE_FILTERS, STAGES[depth])):
            x = stack_v2(x, filters, blocks, stride1=1 if i == last else 2, name=f"conv{i + 2}")
        return x
    return stages


def ResNet50V2(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
               pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
               name: str = "resnet50v2") -> Model:
    """ResNet50V2 (``keras.applications.ResNet50V2``); arguments as :func:`ember.applications.ResNet50`.

    Inputs are expected preprocessed by :func:`preprocess_input` (to [-1, 1]).

    Example:
        >>> from ember import applications
        >>> applications.ResNet50V2(include_top=False, input_shape=(32, 32, 3)).output_shape
        (None, 1, 1, 2048)
    """
    return build_resnet("ResNet50V2", _stages_v2(50), True, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def ResNet101V2(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "resnet101v2") -> Model:
    """ResNet101V2; arguments as :func:`ember.applications.ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.ResNet101V2(include_top=False, pooling="max").output_shape
        (None, 2048)
    """
    return build_resnet("ResNet101V2", _stages_v2(101), True, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def ResNet152V2(include_top: bool = True, weights: Any = None, input_tensor: Any = None, input_shape: Any = None,
                pooling: str | None = None, classes: int = 1000, classifier_activation: Any = "softmax",
                name: str = "resnet152v2") -> Model:
    """ResNet152V2; arguments as :func:`ember.applications.ResNet50`.

    Example:
        >>> from ember import applications
        >>> applications.ResNet152V2(input_shape=(64, 64, 3), classes=3).output_shape
        (None, 3)
    """
    return build_resnet("ResNet152V2", _stages_v2(152), True, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
