"""Pooling layers: windowed ``MaxPooling*``/``AveragePooling*`` and ``GlobalMax/AveragePooling*``."""

from ember.layers.pooling.average_pooling1d import AveragePooling1D
from ember.layers.pooling.average_pooling2d import AveragePooling2D
from ember.layers.pooling.average_pooling3d import AveragePooling3D
from ember.layers.pooling.base_global_pooling import BaseGlobalPooling as BaseGlobalPooling
from ember.layers.pooling.base_pooling import BasePooling as BasePooling
from ember.layers.pooling.global_average_pooling1d import GlobalAveragePooling1D
from ember.layers.pooling.global_average_pooling2d import GlobalAveragePooling2D
from ember.layers.pooling.global_average_pooling3d import GlobalAveragePooling3D
from ember.layers.pooling.global_max_pooling1d import GlobalMaxPooling1D
from ember.layers.pooling.global_max_pooling2d import GlobalMaxPooling2D
from ember.layers.pooling.global_max_pooling3d import GlobalMaxPooling3D
from ember.layers.pooling.max_pooling1d import MaxPooling1D
from ember.layers.pooling.max_pooling2d import MaxPooling2D
from ember.layers.pooling.max_pooling3d import MaxPooling3D

# Keras's aliases.
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D)
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D

# The base classes are importable from this package (the redundant aliases re-export them) but are
# not in __all__, which ember.layers re-exports: as in Keras, they are not layers of their own.
__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
]
