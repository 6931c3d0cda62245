"""Merge layers: combine a list of inputs into one output."""

from ember.layers.merge.add import Add
from ember.layers.merge.average import Average
from ember.layers.merge.base import Merge
from ember.layers.merge.concatenate import Concatenate
from ember.layers.merge.dot import Dot
from ember.layers.merge.maximum import Maximum
from ember.layers.merge.minimum import Minimum
from ember.layers.merge.multiply import Multiply
from ember.layers.merge.subtract import Subtract

__all__ = ["Add", "Average", "Concatenate", "Dot", "Maximum", "Merge", "Minimum", "Multiply", "Subtract"]
