"""The ``preprocess_input`` of the families trained on inputs in [-1, 1] (Keras's ``mode="tf"``).

MobileNet, MobileNetV2, ResNetV2, InceptionV3, InceptionResNetV2 and Xception each export it
under their own module (``ember.applications.xception.preprocess_input``, as Keras does).
"""

from __future__ import annotations

from typing import Any

from ember.applications.imagenet_utils import preprocess_input as _preprocess


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Images in [0, 255] scaled to [-1, 1] (``mode="tf"``).

    Example:
        >>> import numpy as np
        >>> from ember.applications import xception
        >>> xception.preprocess_input(np.array([[[0.0, 127.5, 255.0]]])).tolist()
        [[[-1.0, 0.0, 1.0]]]
    """
    return _preprocess(x, data_format=data_format, mode="tf")
