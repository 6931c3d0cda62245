"""Ember: one model definition, three backends (NumPy, PyTorch, MLX).

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> ops.shape(ops.zeros((2, 3)))
    (2, 3)
"""

from __future__ import annotations

from ember._version import __version__  # noqa: F401  (public: ember.__version__)

from ember import backends, dtypes, ops  # noqa: E402
from ember.backends import (  # noqa: E402
    BackendNotAvailableError,
    available_devices,
    get_backend,
    set_backend,
    using_backend,
)
from ember.ops import random  # noqa: E402
from ember import activations, constraints, initializers, layers, regularizers, saving  # noqa: E402
from ember.layers import Input, Variable, clear_session  # noqa: E402
from ember.models import Model, Sequential  # noqa: E402
from ember.saving import load_model  # noqa: E402
from ember.autodiff import GradientTape, custom_gradient, custom_vjp, grad, jacobian, stop_gradient, value_and_grad, vjp  # noqa: E402
from ember._tensor import EmberTensor, Tensor, convert_to_tensor, is_tensor, tensor  # noqa: E402
from ember import features  # noqa: E402
from ember import losses, metrics  # noqa: E402
from ember import callbacks, data  # noqa: E402
from ember import distribute  # noqa: E402
from ember import optimizers  # noqa: E402
from ember import dtype_policies, mixed_precision  # noqa: E402
from ember import utils, wirings  # noqa: E402
from ember.training.trainer import Trainer  # noqa: E402

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
