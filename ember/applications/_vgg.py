"""The VGG graph (Simonyan & Zisserman 2014) both VGG16 and VGG19 build, with Keras 3's layer names.

Example:
    >>> from ember.applications import _vgg
    >>> _vgg.VGG_BLOCKS[16]
    (2, 2, 3, 3, 3)
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.models.model import Model

# Convolutions per block (64, 128, 256, 512, 512 filters) of each depth.
VGG_BLOCKS = {16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}
VGG_FILTERS = (64, 128, 256, 512, 512)


def build_vgg(depth: int, include_top: bool, weights: Any, input_tensor: Any, input_shape: Any, pooling: Any,
              classes: int, classifier_activation: Any, name: str) -> Model:
    """VGG16 or VGG19: five blocks of 3x3 ReLU convolutions and 2x2 max pooling, two 4096-unit Dense at the top."""
    family = f"VGG{depth}"
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=224, min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = image
    for block, (filters, convs) in enumerate(zip(VGG_FILTERS, VGG_BLOCKS[depth]), start=1):
        for conv in range(1, convs + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{conv}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = _graph.pooled(x, pooling)
    return _graph.finish(family, image, input_tensor, x, name, weights)
