"""Reshaping layers for spatial data: ``UpSampling*``, ``ZeroPadding*`` and ``Cropping*``."""

from ember.layers.reshaping.base_cropping import BaseCropping as BaseCropping
from ember.layers.reshaping.base_up_sampling import BaseUpSampling as BaseUpSampling
from ember.layers.reshaping.base_zero_padding import BaseZeroPadding as BaseZeroPadding
from ember.layers.reshaping.cropping1d import Cropping1D
from ember.layers.reshaping.cropping2d import Cropping2D
from ember.layers.reshaping.cropping3d import Cropping3D
from ember.layers.reshaping.up_sampling1d import UpSampling1D
from ember.layers.reshaping.up_sampling2d import UpSampling2D
from ember.layers.reshaping.up_sampling3d import UpSampling3D
from ember.layers.reshaping.zero_padding1d import ZeroPadding1D
from ember.layers.reshaping.zero_padding2d import ZeroPadding2D
from ember.layers.reshaping.zero_padding3d import ZeroPadding3D

# The base classes are importable from this package (the redundant aliases re-export them) but are
# not in __all__, which ember.layers re-exports: as in Keras, they are not layers of their own.
__all__ = [
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
]
