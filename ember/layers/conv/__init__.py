"""Convolution layers: ``Conv1D/2D/3D``, their transposes, depthwise and separable convolutions."""

from ember.layers.conv.base_conv import BaseConv as BaseConv
from ember.layers.conv.base_conv_transpose import BaseConvTranspose as BaseConvTranspose
from ember.layers.conv.base_depthwise_conv import BaseDepthwiseConv as BaseDepthwiseConv
from ember.layers.conv.base_separable_conv import BaseSeparableConv as BaseSeparableConv
from ember.layers.conv.conv1d import Conv1D
from ember.layers.conv.conv1d_transpose import Conv1DTranspose
from ember.layers.conv.conv2d import Conv2D
from ember.layers.conv.conv2d_transpose import Conv2DTranspose
from ember.layers.conv.conv3d import Conv3D
from ember.layers.conv.conv3d_transpose import Conv3DTranspose
from ember.layers.conv.depthwise_conv1d import DepthwiseConv1D
from ember.layers.conv.depthwise_conv2d import DepthwiseConv2D
from ember.layers.conv.separable_conv1d import SeparableConv1D
from ember.layers.conv.separable_conv2d import SeparableConv2D

# Keras's aliases.
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D

# The base classes are importable from this package (the redundant aliases re-export them) but are
# not in __all__, which ember.layers re-exports: as in Keras, they are not layers of their own.
__all__ = [
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "Convolution1D",
    "Convolution1DTranspose",
    "Convolution2D",
    "Convolution2DTranspose",
    "Convolution3D",
    "Convolution3DTranspose",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "SeparableConv1D",
    "SeparableConv2D",
    "SeparableConvolution1D",
    "SeparableConvolution2D",
]
