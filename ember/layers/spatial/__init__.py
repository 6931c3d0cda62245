"""Spatially embedded networks: the spatial regularizers, ``SpatialCfC`` and ``SeRSNN``.

Neurons get coordinates from :class:`ember.wirings.SpatialWiring`;
:class:`SpatialRegularizer` (:mod:`~ember.layers.spatial.regularizers`) charges each weight
its length (optionally times the weighted communicability, Achterberg et al., 2023);
:class:`SpatialCfC` and :class:`SeRSNN` are a wired CfC and a recurrent LIF layer that pay it.
"""

from ember.layers.spatial.regularizers import SpatialRegularizer
from ember.layers.spatial.sersnn import SeRSNN
from ember.layers.spatial.spatial_cfc import SpatialCfC, SpatialCfCCell

__all__ = ["SeRSNN", "SpatialCfC", "SpatialCfCCell", "SpatialRegularizer"]
