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
    activations,
    backends,
    callbacks,
    constraints,
    data,
    distribute,
    dtype_policies,
    dtypes,
    features,
    initializers,
    layers,
    losses,
    metrics,
    mixed_precision,
    ops,
    optimizers,
    regularizers,
    saving,
    utils,
    wirings,
)
from ember._tensor import EmberTensor, Tensor, convert_to_tensor, is_tensor, tensor
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
from ember.backends import (
    BackendNotAvailableError,
    available_devices,
    get_backend,
    set_backend,
    using_backend,
)
from ember.layers import Input, Variable, clear_session
from ember.models import Model, Sequential
from ember.ops import random
from ember.saving import load_model
from ember.training.trainer import Trainer

__all__ = [
    "BackendNotAvailableError",
    "Trainer",
    "Variable",
    "EmberTensor",
    "GradientTape",
    "Input",
    "Model",
    "Sequential",
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
