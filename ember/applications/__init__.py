"""Keras's ready-made image models (``keras.applications``), built from Ember's layers.

Each constructor takes Keras 3's arguments (``include_top``, ``weights``, ``input_tensor``,
``input_shape``, ``pooling``, ``classes``, ``classifier_activation``, ``name`` and the family's own,
such as MobileNet's ``alpha``) and builds the same layer graph under the same layer names, so a
weights file Keras wrote for the model loads into Ember's and gives the same outputs on every
backend. Ember downloads nothing: ``weights`` is ``None`` (random initial weights, drawn when
the model is first used or built) or the path of a file you have (a Keras ``.weights.h5`` or
``.keras`` file, or an Ember checkpoint); ``weights="imagenet"`` raises an error saying how to
get such a file from Keras. Each family's module has ``preprocess_input`` and
``decode_predictions`` (which reads ImageNet's class index from a local file).

Not built yet: ``NASNetMobile`` and ``NASNetLarge``. The models are channels-last.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import applications
    >>> ember.set_backend("numpy")
    >>> model = applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, classes=4)
    >>> images = applications.mobilenet_v2.preprocess_input(np.full((1, 32, 32, 3), 255.0, "float32"))
    >>> model.predict(images, verbose=0).shape
    (1, 4)
"""

from __future__ import annotations

from ember.applications import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    mobilenet_v3,
    resnet,
    resnet50,
    resnet_v2,
    vgg16,
    vgg19,
    xception,
)
from ember.applications.convnext import ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall, ConvNeXtTiny, ConvNeXtXLarge
from ember.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from ember.applications.efficientnet import (
    EfficientNetB0,
    EfficientNetB1,
    EfficientNetB2,
    EfficientNetB3,
    EfficientNetB4,
    EfficientNetB5,
    EfficientNetB6,
    EfficientNetB7,
)
from ember.applications.efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from ember.applications.inception_resnet_v2 import InceptionResNetV2
from ember.applications.inception_v3 import InceptionV3
from ember.applications.mobilenet import MobileNet
from ember.applications.mobilenet_v2 import MobileNetV2
from ember.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from ember.applications.resnet import ResNet50, ResNet101, ResNet152
from ember.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from ember.applications.vgg16 import VGG16
from ember.applications.vgg19 import VGG19
from ember.applications.xception import Xception

__all__ = [
    "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge",
    "DenseNet121", "DenseNet169", "DenseNet201",
    "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5",
    "EfficientNetB6", "EfficientNetB7",
    "EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2L",
    "EfficientNetV2M", "EfficientNetV2S",
    "InceptionResNetV2", "InceptionV3", "MobileNet", "MobileNetV2", "MobileNetV3Large", "MobileNetV3Small",
    "ResNet50", "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2",
    "VGG16", "VGG19", "Xception",
    "convnext", "densenet", "efficientnet", "efficientnet_v2", "imagenet_utils", "inception_resnet_v2",
    "inception_v3", "mobilenet",
    "mobilenet_v2", "mobilenet_v3", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception",
]
