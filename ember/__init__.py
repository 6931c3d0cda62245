"""Ember: one model definition, three backends (NumPy, PyTorch, MLX).

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> ops.shape(ops.zeros((2, 3)))
    (2, 3)
"""

from __future__ import annotations

from ember import (
    _namespaces,
    activations,
    applications,
    backend,
    backends,
    config,
    constraints,
    distribute,
    dtype_policies,
    dtypes,
    features,
    initializers,
    layers,
    mixed_precision,
    ops,
    quantizers,
    regularizers,
    saving,
    tree,
    utils,
    wirings,
)
from ember._tensor import EmberTensor, Tensor, convert_to_tensor, is_tensor, tensor

# Keras's top-level classes and functions (keras.Layer, keras.Loss, keras.KerasTensor, keras.version ...).
from ember._top_level import device, version
from ember._version import __version__  # noqa: F401  (public: ember.__version__)
from ember.autodiff import (
    GradientTape,
    custom_gradient,
    custom_vjp,
    grad,
    jacobian,
    stop_gradient,
    value_and_grad,
    vjp,
)
from ember.autodiff.remat import RematScope, get_current_remat_mode, remat
from ember.backends import (
    BackendNotAvailableError,
    available_devices,
    get_backend,
    set_backend,
    using_backend,
)
from ember.dtype_policies import DTypePolicy, FloatDTypePolicy
from ember.initializers import Initializer
from ember.layers import Input, Layer, Variable, clear_session
from ember.models import Model, Sequential
from ember.ops import random
from ember.quantizers import Quantizer
from ember.regularizers import Regularizer
from ember.saving import load_model
from ember.symbolic import SymbolicTensor as KerasTensor
from ember.training import callbacks, data, losses, metrics, optimizers
from ember.training.losses import Loss
from ember.training.metrics import Metric
from ember.training.optimizers import Optimizer
from ember.training.trainer import Trainer

# Keras's namespaces ember.losses, ember.metrics, ember.optimizers, ember.callbacks and ember.data are the
# modules of ember.training themselves, importable under those names too (one home each).
_namespaces.install()

__all__ = [
    "BackendNotAvailableError",
    "DTypePolicy", "FloatDTypePolicy", "Initializer", "KerasTensor", "Layer", "Loss", "Metric", "Optimizer",
    "Regularizer", "applications", "backend", "config", "device", "tree", "version",
    "Trainer",
    "Variable",
    "EmberTensor",
    "GradientTape",
    "RematScope",
    "get_current_remat_mode",
    "remat",
    "Input",
    "Model",
    "Sequential",
    "Quantizer",
    "Tensor",
    "activations",
    "available_devices",
    "backends",
    "callbacks",
    "clear_session",
    "constraints",
    "convert_to_tensor",
    "custom_gradient",
    "custom_vjp",
    "data",
    "distribute",
    "dtype_policies",
    "dtypes",
    "features",
    "get_backend",
    "grad",
    "initializers",
    "is_tensor",
    "jacobian",
    "layers",
    "load_model",
    "losses",
    "metrics",
    "mixed_precision",
    "ops",
    "optimizers",
    "quantizers",
    "random",
    "regularizers",
    "saving",
    "set_backend",
    "utils",
    "stop_gradient",
    "tensor",
    "using_backend",
    "value_and_grad",
    "vjp",
    "wirings",
]
