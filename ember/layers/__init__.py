"""``ember.layers``: immutable layers with explicit state (see :mod:`ember.layers.layer`).

Example:
    >>> from ember import layers, ops
    >>> dense = layers.Dense(3)
    >>> state = dense.build((None, 2), seed=0)
    >>> outputs, state = dense.apply(state, ops.ones((4, 2)))
    >>> ops.shape(outputs)
    (4, 3)
"""

from ember.layers import conv, pooling, reshaping, rnn
from ember.layers.attention import (
    AdditiveAttention,
    Attention,
    GroupedQueryAttention,
    GroupQueryAttention,
    MultiHeadAttention,
)
from ember.layers.conv import *  # noqa: F403  (its __all__, re-exported below)
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
from ember.layers.ct import CTGRU, CTRNN, CTGRUCell, CTRNNCell
from ember.layers.layer import DeclarativeLayer, Layer, clear_session
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
from ember.layers.ncp import (
    LTC,
    CfC,
    CfCCell,
    LTCCell,
    MixedMemoryCell,
    NCPCell,
    StrideAwareCfC,
    StrideAwareCfCCell,
    StrideAwareWiredCfCCell,
    WiredCfCCell,
)
from ember.layers.normalization import (
    BatchNormalization,
    GroupNormalization,
    LayerNormalization,
    RMSNormalization,
    UnitNormalization,
)
from ember.layers.normalization.auto_contrast import AutoContrast
from ember.layers.pooling import *  # noqa: F403  (its __all__, re-exported below)
from ember.layers.regularization import (
    ActivityRegularization,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from ember.layers.reshaping import *  # noqa: F403  (its __all__, re-exported below)
from ember.layers.rnn import *  # noqa: F403  (its __all__, re-exported below)
from ember.layers.variable import Variable
from ember.layers.weights import WeightSpec

__all__ = [
    "ActivityRegularization",
    "AutoContrast",
    "BatchNormalization",
    "GaussianDropout",
    "GaussianNoise",
    "GroupNormalization",
    "LayerNormalization",
    "RMSNormalization",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "UnitNormalization",
    "Activation",
    "AdditiveAttention",
    "Attention",
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
    "DeclarativeLayer",
    "Layer",
    "Variable",
    "WeightSpec",
    "Maximum",
    "Minimum",
    "MultiHeadAttention",
    "GroupQueryAttention",
    "GroupedQueryAttention",
    "Multiply",
    "Permute",
    "RepeatVector",
    "Reshape",
    "Subtract",
    "clear_session",
]

# Convolution, pooling and spatial reshaping layers: each package's __all__ (its layers and
# Keras's aliases; the packages' base classes are importable there, not exported here).
__all__ += conv.__all__
__all__ += pooling.__all__
__all__ += reshaping.__all__

# Recurrent layers.
__all__ += rnn.__all__

# Neural circuit policies (continuous-time and wired cells).
NCP = NCPCell  # the single-step NCP cell under its short name
__all__ += [
    "CfC",
    "CfCCell",
    "LTC",
    "LTCCell",
    "MixedMemoryCell",
    "NCP",
    "NCPCell",
    "WiredCfCCell",
]
# The other continuous-time cells (issue 32): CT-RNN, CT-GRU, the stride-aware CfC.
__all__ += [
    "CTGRU",
    "CTGRUCell",
    "CTRNN",
    "CTRNNCell",
    "StrideAwareCfC",
    "StrideAwareCfCCell",
    "StrideAwareWiredCfCCell",
]

# Keras's activation layers, functional merge helpers, adaptive pooling, AlphaDropout and
# layer (de)serialization (issue 19).
from ember.layers.activation import ELU, LeakyReLU, PReLU, ReLU, Softmax  # noqa: E402
from ember.layers.core.einsum_dense import EinsumDense  # noqa: E402
from ember.layers.core.wrapper import Wrapper  # noqa: E402
from ember.layers.merge.functional import (  # noqa: E402
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from ember.layers.pooling.adaptive_pooling import (  # noqa: E402
    AdaptiveAveragePooling1D,
    AdaptiveAveragePooling2D,
    AdaptiveAveragePooling3D,
    AdaptiveMaxPooling1D,
    AdaptiveMaxPooling2D,
    AdaptiveMaxPooling3D,
)
from ember.layers.regularization.alpha_dropout import AlphaDropout  # noqa: E402
from ember.layers.rnn.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D  # noqa: E402
from ember.layers.rnn.stacked_cells import StackedRNNCells  # noqa: E402
from ember.layers.serialization import deserialize, serialize  # noqa: E402

__all__ += [
    "ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax", "EinsumDense", "Wrapper",
    "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "StackedRNNCells",
    "add", "average", "concatenate", "dot", "maximum", "minimum", "multiply", "subtract",
    "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
    "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D",
    "AlphaDropout", "deserialize", "serialize",
]

# Preprocessing layers (issue 19, item 3).
from ember.layers.preprocessing import (  # noqa: E402
    CategoryEncoding,
    CenterCrop,
    Discretization,
    Hashing,
    IntegerLookup,
    Normalization,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomRotation,
    RandomTranslation,
    RandomZoom,
    Rescaling,
    Resizing,
    StringLookup,
    TextVectorization,
)

__all__ += [
    "CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup", "StringLookup", "TextVectorization",
    "Normalization", "RandomBrightness", "RandomContrast",
    "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom", "Rescaling", "Resizing",
]

# Spiking and spatially embedded networks (issue 32, items 1 and 2).
from ember.layers.spatial import SeRSNN, SpatialCfC, SpatialCfCCell, SpatialRegularizer  # noqa: E402
from ember.layers.spiking import ALIF, LIF, ALIFCell, LIFCell, Synaptic, SynapticCell  # noqa: E402

__all__ += ["ALIF", "ALIFCell", "LIF", "LIFCell", "SeRSNN", "SpatialCfC", "SpatialCfCCell", "SpatialRegularizer",
            "Synaptic", "SynapticCell"]
