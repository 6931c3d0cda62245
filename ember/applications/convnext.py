"""ConvNeXt Tiny, Small, Base, Large and XLarge (Liu et al. 2022), with Keras 3's layer graph and names.

As in Keras, the stem and each downsampling step are nested ``Sequential`` models, and the
model normalises pixels in [0, 255] itself (``include_preprocessing``), so :func:`preprocess_input`
returns its input unchanged. Stochastic depth is off (Keras's constructors fix it at 0).

Example:
    >>> import ember
    >>> from ember.applications import convnext
    >>> ember.set_backend("numpy")
    >>> convnext.ConvNeXtTiny(include_top=False, input_shape=(32, 32, 3), pooling="avg").output_shape
    (None, 768)
"""

from __future__ import annotations

from typing import Any

from ember import layers
from ember.applications import _args, _graph
from ember.applications._layer_scale import LayerScale
from ember.applications.imagenet_utils import decode_predictions as _decode
from ember.models.model import Model
from ember.models.sequential import Sequential
from ember.symbolic import SymbolicTensor

# (depths, projection dims) of each size; all default to 224x224 inputs.
CONFIGS = {"tiny": ((3, 3, 9, 3), (96, 192, 384, 768)), "small": ((3, 3, 27, 3), (96, 192, 384, 768)),
           "base": ((3, 3, 27, 3), (128, 256, 512, 1024)), "large": ((3, 3, 27, 3), (192, 384, 768, 1536)),
           "xlarge": ((3, 3, 27, 3), (256, 512, 1024, 2048))}
LAYER_SCALE_INIT = 1e-6
EPSILON = 1e-6


def convnext_block(x: SymbolicTensor, projection_dim: int, name: str) -> SymbolicTensor:
    """Depthwise 7x7 -> LayerNorm -> Dense (4x) -> GELU -> Dense -> LayerScale, added to ``x``."""
    inputs = x
    x = layers.Conv2D(projection_dim, kernel_size=7, padding="same", groups=projection_dim,
                      name=f"{name}_depthwise_conv")(x)
    x = layers.LayerNormalization(epsilon=EPSILON, name=f"{name}_layernorm")(x)
    x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
    x = layers.Activation("gelu", name=f"{name}_gelu")(x)
    x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
    x = LayerScale(LAYER_SCALE_INIT, projection_dim, name=f"{name}_layer_scale")(x)
    x = layers.Activation("linear", name=f"{name}_identity")(x)
    return layers.Add()([inputs, x])  # Keras: ``inputs + x`` (a tensor operation, one graph node)


def build_convnext(family: str, depths: tuple, dims: tuple, include_top: bool, include_preprocessing: bool,
                   weights: Any, input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
                   classifier_activation: Any, name: str) -> Model:
    """A ConvNeXt with ``depths`` blocks of ``dims`` channels in its four stages: prestem normalisation, a
    patchify stem, the stages with downsampling between them, the head."""
    _args.check_weights(family, weights)
    _args.check_top(family, classes, pooling)
    shape = _args.input_shape_for(family, input_shape, default_size=224, min_size=32, include_top=include_top)
    image = _graph.image_input(family, input_tensor, shape)
    x = image
    if include_preprocessing and image.shape[-1] == 3:
        x = layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                 variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
                                 name=f"{name}_prestem_normalization")(x)
    downsampling = [Sequential([layers.Conv2D(dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
                                layers.LayerNormalization(epsilon=EPSILON, name=f"{name}_stem_layernorm")],
                               name=f"{name}_stem")]
    for i in range(3):
        downsampling.append(Sequential(
            [layers.LayerNormalization(epsilon=EPSILON, name=f"{name}_downsampling_layernorm_{i}"),
             layers.Conv2D(dims[i + 1], kernel_size=2, strides=2, name=f"{name}_downsampling_conv_{i}")],
            name=f"{name}_downsampling_block_{i}"))
    for i, (depth, dim) in enumerate(zip(depths, dims)):
        x = downsampling[i](x)
        for j in range(depth):
            x = convnext_block(x, dim, f"{name}_stage_{i}_block_{j}")
    if include_top:
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=EPSILON, name=f"{name}_head_layernorm")(x)
        x = layers.Dense(classes, activation=classifier_activation, name=f"{name}_head_dense")(x)
    else:
        x = _graph.pooled(x, pooling)
        x = layers.LayerNormalization(epsilon=EPSILON)(x)
    return _graph.finish(family, image, input_tensor, x, name, weights)


def _constructor(size: str) -> Any:
    def constructor(include_top: bool = True, include_preprocessing: bool = True, weights: Any = None,
                    input_tensor: Any = None, input_shape: Any = None, pooling: str | None = None,
                    classes: int = 1000, classifier_activation: Any = "softmax",
                    name: str = f"convnext_{size}") -> Model:
        return build_convnext(f"ConvNeXt{title}", depths, dims, include_top, include_preprocessing, weights,
                              input_tensor, input_shape, pooling, classes, classifier_activation, name)
    title = "XLarge" if size == "xlarge" else size.capitalize()
    depths, dims = CONFIGS[size]
    constructor.__name__ = constructor.__qualname__ = f"ConvNeXt{title}"
    constructor.__doc__ = (
        f"ConvNeXt{title} (``keras.applications.ConvNeXt{title}``): depths {depths}, widths {dims}.\n\n"
        f"    Arguments as :func:`ember.applications.ResNet50`, plus ``include_preprocessing`` (the model's own\n"
        f"    normalisation of pixels in [0, 255]); note Keras's order: ``include_preprocessing`` second.\n\n"
        f"    Example:\n"
        f"        >>> from ember import applications\n"
        f"        >>> applications.ConvNeXt{title}(include_top=False, pooling='avg').output_shape\n"
        f"        (None, {dims[-1]})\n")
    return constructor


ConvNeXtTiny = _constructor("tiny")
ConvNeXtSmall = _constructor("small")
ConvNeXtBase = _constructor("base")
ConvNeXtLarge = _constructor("large")
ConvNeXtXLarge = _constructor("xlarge")


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The input unchanged: ConvNeXt normalises inside the model (``include_preprocessing``)."""
    return x


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` ImageNet classes of each prediction (see :func:`.imagenet_utils.decode_predictions`)."""
    return _decode(preds, top=top, class_index=class_index)
