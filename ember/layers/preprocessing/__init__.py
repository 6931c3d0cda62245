"""Preprocessing layers (Keras's): numeric ones run on every backend inside models; the string
layers (``StringLookup``, ``TextVectorization``) run on the host (NumPy) and feed the backend."""

from ember.layers.preprocessing.affine import (
    RandomRotation,
    RandomTranslation,
    RandomZoom,
)
from ember.layers.preprocessing.category_encoding import CategoryEncoding
from ember.layers.preprocessing.center_crop import CenterCrop
from ember.layers.preprocessing.color import RandomBrightness, RandomContrast
from ember.layers.preprocessing.discretization import Discretization
from ember.layers.preprocessing.hashing import Hashing
from ember.layers.preprocessing.integer_lookup import IntegerLookup
from ember.layers.preprocessing.normalization import Normalization
from ember.layers.preprocessing.random_crop import RandomCrop
from ember.layers.preprocessing.random_flip import RandomFlip
from ember.layers.preprocessing.rescaling import Rescaling
from ember.layers.preprocessing.resizing import Resizing
from ember.layers.preprocessing.string_lookup import StringLookup
from ember.layers.preprocessing.text_vectorization import TextVectorization

__all__ = [
    "CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup", "StringLookup",
    "TextVectorization", "Normalization", "RandomBrightness", "RandomContrast",
    "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom", "Rescaling", "Resizing",
]
