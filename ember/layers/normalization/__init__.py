"""Normalization layers: batch, layer, group, RMS and unit normalization."""

from ember.layers.normalization.batch_normalization import BatchNormalization
from ember.layers.normalization.group_normalization import GroupNormalization
from ember.layers.normalization.layer_normalization import LayerNormalization
from ember.layers.normalization.rms_normalization import RMSNormalization
from ember.layers.normalization.unit_normalization import UnitNormalization

__all__ = ["BatchNormalization", "GroupNormalization", "LayerNormalization", "RMSNormalization", "UnitNormalization"]
