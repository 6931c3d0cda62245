"""The checks every application constructor shares: ``weights``, ``input_shape``, ``pooling``, classifier.

Keras's rules (``keras.applications.imagenet_utils.obtain_input_shape``), with one difference:
Ember never downloads, so ``weights="imagenet"`` is refused with the way to get a file instead.

Example:
    >>> from ember.applications import _args
    >>> _args.input_shape_for("ResNet50", None, default_size=224, min_size=32, include_top=True)
    (224, 224, 3)
    >>> _args.input_shape_for("ResNet50", None, default_size=224, min_size=32, include_top=False)
    (None, None, 3)
"""

from __future__ import annotations

import os
from typing import Any

POOLINGS = (None, "avg", "max")


def check_weights(family: str, weights: Any) -> None:
    """Refuse anything but ``None`` or the path of an existing local file.

    Raises:
        ValueError: ``"imagenet"`` (Ember downloads nothing: the message says how to get a file), or
            a value that is neither ``None`` nor an existing file.
    """
    if weights is None:
        return
    if isinstance(weights, str) and weights == "imagenet":
        raise ValueError(
            f"ember.applications.{family}: weights='imagenet' would download the ImageNet weights, and Ember "
            f"makes no network calls. Pass the path of a weights file you have instead: the .h5 file Keras "
            f"downloaded for keras.applications.{family}(weights='imagenet') (Keras keeps it in ~/.keras/models/), "
            f"or one you save from that Keras model, e.g. model.save_weights('{family.lower()}.weights.h5'), then "
            f"ember.applications.{family}(weights='{family.lower()}.weights.h5'). Keras .weights.h5, .keras and "
            f"legacy .h5 files of the same architecture load, and Ember checkpoints.")
    if not isinstance(weights, (str, os.PathLike)) or not os.path.isfile(os.fspath(weights)):
        raise ValueError(f"ember.applications.{family}: weights should be None (random initialization) or the path "
                         f"of a local weights file; received weights={weights!r} (no such file)")


def check_top(family: str, classes: Any, pooling: Any) -> None:
    """Check ``classes`` and ``pooling``.

    Raises:
        ValueError: ``classes`` is not a positive integer, or ``pooling`` is not None, "avg" or "max".
    """
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise ValueError(f"ember.applications.{family}: classes should be a positive integer; received "
                         f"classes={classes!r}")
    if pooling not in POOLINGS:
        raise ValueError(f"ember.applications.{family}: pooling should be None, 'avg' or 'max'; received "
                         f"pooling={pooling!r}")


def input_shape_for(family: str, input_shape: Any, default_size: int, min_size: int, include_top: bool) -> tuple:
    """The input shape (channels last) Keras's ``obtain_input_shape`` gives, without ImageNet weights.

    ``include_top=True`` needs a static shape (the default ``(default_size, default_size, 3)``);
    without the top the spatial size may be ``None``. Any channel count is accepted (Keras asks for 3
    only with its ImageNet weights).

    Raises:
        ValueError: not three dimensions, a side under ``min_size``, or ``None`` sides with the top.
    """
    if input_shape is None:
        if include_top:
            return (default_size, default_size, 3)
        return (None, None, 3)
    shape = tuple(input_shape)
    if len(shape) != 3:
        raise ValueError(f"ember.applications.{family}: input_shape must be a tuple of three integers "
                         f"(rows, cols, channels); received input_shape={input_shape!r}")
    if any(side is not None and side < min_size for side in shape[:2]):
        raise ValueError(f"ember.applications.{family}: input size must be at least {min_size}x{min_size}; "
                         f"received input_shape={input_shape!r}")
    if include_top and None in shape:
        raise ValueError(f"ember.applications.{family}: with include_top=True the input_shape must be static "
                         f"(the classifier's Dense needs a fixed size); received input_shape={input_shape!r}")
    return shape
