"""Activation functions by name, resolved against ``ember.ops.nn`` at call time.

Layers store activations as names (``"relu"``), so configs stay plain JSON and the
function always belongs to the active backend.

Example:
    >>> import ember
    >>> from ember import activations, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(activations.get("relu")(ops.convert_to_tensor([-1.0, 2.0]))).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from typing import Any, Callable
from ember import ops

NAMES = (
    "linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "sigmoid",
    "hard_sigmoid", "softplus", "softsign", "tanh", "lecun_tanh", "softmax", "log_softmax", "exponential",
)


def _linear(x: Any) -> Any:
    return x


def _make(name: str) -> Callable[[Any], Any]:
    if name == "linear":
        return _linear
    if name == "swish":
        name = "silu"
    if name == "exponential":
        return lambda x: ops.exp(x)
    if name == "gelu":  # Keras's activations.gelu is the exact (erf) form; ops.nn.gelu defaults to tanh's
        def gelu(x: Any) -> Any:
            return ops.nn.gelu(x, approximate=False)

        return gelu

    def activation(x: Any) -> Any:
        return getattr(ops.nn, name)(x)

    activation.__name__ = name
    return activation


_FUNCTIONS = {name: _make(name) for name in NAMES}


def standardize(identifier: Any, argument: str = "activation") -> str | Callable:
    """A valid activation name (``None`` means ``"linear"``), or a callable kept as is.

    Raises:
        ValueError: an unknown name; the message lists the valid ones.
    """
    if identifier is None:
        return "linear"
    if isinstance(identifier, str):
        if identifier not in _FUNCTIONS:
            raise ValueError(f"{argument}: unknown activation {identifier!r}; expected one of {NAMES}")
        return identifier
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
        return name if name in _FUNCTIONS and _FUNCTIONS[name] is identifier else identifier
    raise TypeError(f"{argument}: expected an activation name or a function, received {identifier!r}")


def get(identifier: Any) -> Callable[[Any], Any]:
    """The activation function for a name, ``None`` (linear) or a callable."""
    standardized = standardize(identifier)
    return _FUNCTIONS[standardized] if isinstance(standardized, str) else standardized
