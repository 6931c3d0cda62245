"""Activation layers (Keras's ``ReLU``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``Softmax``)."""

from ember.layers.activation.elu import ELU
from ember.layers.activation.leaky_relu import LeakyReLU
from ember.layers.activation.prelu import PReLU
from ember.layers.activation.relu import ReLU
from ember.layers.activation.softmax import Softmax

__all__ = ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax"]
