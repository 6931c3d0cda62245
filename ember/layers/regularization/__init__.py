"""Regularization layers: spatial dropout, Gaussian noise/dropout, activity regularization."""

from ember.layers.regularization.activity_regularization import ActivityRegularization
from ember.layers.regularization.gaussian_dropout import GaussianDropout
from ember.layers.regularization.gaussian_noise import GaussianNoise
from ember.layers.regularization.spatial_dropout import SpatialDropout1D, SpatialDropout2D, SpatialDropout3D

__all__ = [
    "ActivityRegularization", "GaussianDropout", "GaussianNoise", "SpatialDropout1D", "SpatialDropout2D",
    "SpatialDropout3D",
]
