"""Automatic differentiation on every backend: ``GradientTape`` and functional transforms.

The NumPy engine's VJP rules live in :mod:`ember.autodiff.rules`.
"""

# NumPy's engine registers itself with ember.autodiff.engines (torch's and MLX's are their backends' parts).
from ember.autodiff import numpy_engine as _numpy_engine  # noqa: E402,F401,I001
from ember.autodiff.custom_gradient import custom_gradient, custom_vjp
from ember.autodiff.functional import grad, jacobian, value_and_grad, vjp
from ember.autodiff.tape import GradientTape, is_variable, record_variable_read, stop_gradient

__all__ = [
    "GradientTape",
    "custom_gradient",
    "custom_vjp",
    "grad",
    "is_variable",
    "jacobian",
    "record_variable_read",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]
