"""Reshaping layers for spatial data: ``UpSampling*``, ``ZeroPadding*`` and ``Cropping*``."""

from ember.layers.reshaping.base_cropping import BaseCropping
from ember.layers.reshaping.base_up_sampling import BaseUpSampling
from ember.layers.reshaping.base_zero_padding import BaseZeroPadding
from ember.layers.reshaping.cropping1d import Cropping1D
from ember.layers.reshaping.cropping2d import Cropping2D
from ember.layers.reshaping.cropping3d import Cropping3D
from ember.layers.reshaping.up_sampling1d import UpSampling1D
from ember.layers.reshaping.up_sampling2d import UpSampling2D
from ember.layers.reshaping.up_sampling3d import UpSampling3D
from ember.layers.reshaping.zero_padding1d import ZeroPadding1D
from ember.layers.reshaping.zero_padding2d import ZeroPadding2D
from ember.layers.reshaping.zero_padding3d import ZeroPadding3D

__all__ = [
    "BaseCropping",
    "BaseUpSampling",
    "BaseZeroPadding",
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
