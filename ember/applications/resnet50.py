"""``keras.applications.resnet50``: ResNet50 and its preprocessing under Keras's older module name.

Example:
    >>> from ember.applications import resnet, resnet50
    >>> resnet50.ResNet50 is resnet.ResNet50
    True
"""

from __future__ import annotations

from ember.applications.resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]
