"""``ember.layers``: immutable layers with explicit state (see :mod:`ember.layers.layer`)."""

from ember.layers.core.activation import Activation
from ember.layers.core.dense import Dense
from ember.layers.core.dropout import Dropout
from ember.layers.core.embedding import Embedding
from ember.layers.core.flatten import Flatten
from ember.layers.core.identity import Identity
from ember.layers.core.input_layer import Input, InputLayer
from ember.layers.core.lambda_layer import Lambda
from ember.layers.core.permute import Permute
from ember.layers.core.repeat_vector import RepeatVector
from ember.layers.core.reshape import Reshape
from ember.layers.layer import Layer, clear_session
from ember.layers.merge import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
)

__all__ = [
    "Activation",
    "Add",
    "Average",
    "Concatenate",
    "Dense",
    "Dot",
    "Dropout",
    "Embedding",
    "Flatten",
    "Identity",
    "Input",
    "InputLayer",
    "Lambda",
    "Layer",
    "Maximum",
    "Minimum",
    "Multiply",
    "Permute",
    "RepeatVector",
    "Reshape",
    "Subtract",
    "clear_session",
]
