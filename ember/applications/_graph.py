"""The parts of an application's graph every family shares: its input, its head, the finished model.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.applications import _graph
    >>> ember.set_backend("numpy")
    >>> image = _graph.image_input("Demo", None, (8, 8, 3))
    >>> x = layers.Conv2D(4, 3, name="conv")(image)
    >>> x = _graph.classifier_head(x, True, None, 5, "softmax", top_name="avg_pool")
    >>> model = _graph.finish("Demo", image, None, x, "demo", None)
    >>> model.output_shape
    (None, 5)
"""

from __future__ import annotations

import os
from typing import Any

from ember import global_settings
from ember.applications._blocks import named
from ember.applications._legacy_h5 import is_legacy_h5, load_legacy_h5
from ember.layers.core.dense import Dense
from ember.layers.core.input_layer import Input
from ember.layers.pooling.global_average_pooling2d import GlobalAveragePooling2D
from ember.layers.pooling.global_max_pooling2d import GlobalMaxPooling2D
from ember.models.model import Model
from ember.models.sources import get_source_inputs
from ember.symbolic import SymbolicTensor


def image_input(family: str, input_tensor: Any, input_shape: tuple) -> SymbolicTensor:
    """The image input: ``input_tensor`` (a symbolic tensor) when given, else a new ``Input``.

    Raises:
        TypeError: ``input_tensor`` is not a symbolic tensor (``ember.Input`` or a layer's output).
        ValueError: the image data format is ``"channels_first"`` (the applications are channels-last).
    """
    if global_settings.image_data_format() != "channels_last":
        raise ValueError(f"ember.applications.{family} builds channels-last models; the image data format is "
                         f"{global_settings.image_data_format()!r}: set "
                         f"ember.config.set_image_data_format('channels_last') first")
    if input_tensor is None:
        return Input(shape=input_shape)
    if not isinstance(input_tensor, SymbolicTensor):
        raise TypeError(f"ember.applications.{family}: input_tensor should be a symbolic tensor (ember.Input(...) "
                        f"or a layer's output on one); received {type(input_tensor).__name__}")
    return input_tensor


def pooled(x: SymbolicTensor, pooling: str | None, avg_name: str | None = None,
           max_name: str | None = None) -> SymbolicTensor:
    """``x`` through global average or max pooling (``pooling``), or unchanged (``None``)."""
    if pooling == "avg":
        return GlobalAveragePooling2D(**named(avg_name))(x)
    if pooling == "max":
        return GlobalMaxPooling2D(**named(max_name))(x)
    return x


def classifier_head(x: SymbolicTensor, include_top: bool, pooling: str | None, classes: int,
                    classifier_activation: Any, top_name: str | None = None, avg_name: str | None = None,
                    max_name: str | None = None) -> SymbolicTensor:
    """Keras's usual head: global average pooling and a ``predictions`` Dense with the top, else ``pooling``.

    ``top_name`` names the top's pooling layer (``"avg_pool"`` in ResNet and DenseNet, unnamed in others);
    ``avg_name``/``max_name`` the feature-extraction pooling layers.
    """
    if include_top:
        x = GlobalAveragePooling2D(**named(top_name))(x)
        return Dense(classes, activation=classifier_activation, name="predictions")(x)
    return pooled(x, pooling, avg_name, max_name)


def finish(family: str, image: SymbolicTensor, input_tensor: Any, outputs: SymbolicTensor, name: str,
           weights: Any) -> Model:
    """The functional model from ``image`` (or ``input_tensor``'s source inputs) to ``outputs``, weights loaded.

    ``weights=None`` leaves the model to build its random initial weights when first used (or
    ``model.build(seed=...)``); a path loads the file (a Keras ``.weights.h5`` or ``.keras`` file or a
    legacy Keras ``.h5`` file, matched by Keras's layer order, or an Ember checkpoint).
    """
    inputs: Any = image if input_tensor is None else get_source_inputs(input_tensor)
    if isinstance(inputs, list) and len(inputs) == 1:
        inputs = inputs[0]
    model = Model(inputs, outputs, name=name)
    if weights is not None and is_legacy_h5(weights):
        load_legacy_h5(model, weights)
    elif weights is not None:
        model.load_weights(os.fspath(weights))
    return model
