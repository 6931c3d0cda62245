"""Activation functions by name (Keras's ``keras.activations``), resolved against ``ember.ops`` at call time.

Layers store activations as names (``"relu"``), so configs stay plain JSON and the
function always belongs to the active backend. Every name is also a function of this
module with Keras's signature (``activations.relu(x, negative_slope=0.0,
max_value=None, threshold=0.0)``, ``activations.gelu(x, approximate=False)``, ...).

Example:
    >>> import ember
    >>> from ember import activations, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(activations.get("relu")(ops.convert_to_tensor([-1.0, 2.0]))).tolist()
    [0.0, 2.0]
    >>> ops.to_numpy(activations.relu(ops.convert_to_tensor([-1.0, 2.0]), negative_slope=0.5)).tolist()
    [-0.5, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import ops
from ember.validation import did_you_mean as _did_you_mean


def linear(x: Any) -> Any:
    """Identity."""
    return x


def relu(x: Any, negative_slope: float = 0.0, max_value: float | None = None, threshold: float = 0.0) -> Any:
    """Rectified linear unit with Keras's options: slope below ``threshold``, ceiling ``max_value``."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return ops.nn.relu(x)
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    below = ops.multiply(ops.subtract(x, threshold), negative_slope) if negative_slope else ops.zeros_like(x)
    out = ops.where(ops.greater_equal(x, threshold), x, below)
    if max_value is not None:
        out = ops.minimum(out, max_value)
    return out


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``."""
    return ops.nn.relu6(x)


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise."""
    return ops.nn.leaky_relu(x, negative_slope=negative_slope)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """Exponential linear unit."""
    return ops.nn.elu(x, alpha=alpha)


def selu(x: Any) -> Any:
    """Scaled exponential linear unit."""
    return ops.nn.selu(x)


def gelu(x: Any, approximate: bool = False) -> Any:
    """Gaussian error linear unit (exact by default, as Keras's activation; ``approximate``: tanh form)."""
    return ops.nn.gelu(x, approximate=approximate)


def silu(x: Any) -> Any:
    """``x * sigmoid(x)``."""
    return ops.nn.silu(x)


def swish(x: Any) -> Any:
    """Alias of :func:`silu`."""
    return ops.nn.silu(x)


def sigmoid(x: Any) -> Any:
    """Logistic sigmoid."""
    return ops.nn.sigmoid(x)


def hard_sigmoid(x: Any) -> Any:
    """Piecewise-linear sigmoid ``relu6(x + 3) / 6``."""
    return ops.nn.hard_sigmoid(x)


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))``."""
    return ops.nn.softplus(x)


def softsign(x: Any) -> Any:
    """``x / (1 + |x|)``."""
    return ops.nn.softsign(x)


def tanh(x: Any) -> Any:
    """Hyperbolic tangent."""
    return ops.nn.tanh(x)


def lecun_tanh(x: Any) -> Any:
    """LeCun's scaled tanh ``1.7159 tanh(2x/3)``."""
    return ops.nn.lecun_tanh(x)


def _in_float32(fn: Callable[..., Any], x: Any, axis: int | tuple[int, ...]) -> Any:
    """``fn(x, axis)`` computed in float32 for float16/bfloat16 ``x`` (cast back once), as is for other dtypes:
    the exponentials and the normalizing sum are where 16-bit types lose the most (mixed precision)."""
    x = ops.convert_to_tensor(x) if not ops.is_array(x) else x
    dtype = ops.dtype(x)
    if dtype in ("float16", "bfloat16"):
        return ops.cast(fn(ops.cast(x, "float32"), axis=axis), dtype)
    return fn(x, axis=axis)


def softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    """Softmax along ``axis`` (16-bit inputs are computed in float32 and rounded back once)."""
    return _in_float32(ops.nn.softmax, x, axis)


def log_softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    """Log-softmax along ``axis`` (16-bit inputs are computed in float32 and rounded back once)."""
    return _in_float32(ops.nn.log_softmax, x, axis)


def exponential(x: Any) -> Any:
    """``exp(x)``."""
    return ops.exp(x)


def celu(x: Any, alpha: float = 1.0) -> Any:
    """Continuously differentiable ELU."""
    return ops.celu(x, alpha=alpha)


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit over ``axis``."""
    return ops.glu(x, axis=axis)


def hard_shrink(x: Any, threshold: float = 0.5) -> Any:
    """``x`` where ``|x| > threshold``, else 0."""
    return ops.hard_shrink(x, threshold=threshold)


def hard_silu(x: Any) -> Any:
    """``x * relu6(x + 3) / 6``."""
    return ops.hard_silu(x)


def hard_swish(x: Any) -> Any:
    """Alias of :func:`hard_silu`."""
    return ops.hard_silu(x)


def hard_tanh(x: Any) -> Any:
    """``clip(x, -1, 1)``."""
    return ops.hard_tanh(x)


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x))``."""
    return ops.log_sigmoid(x)


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    return ops.multiply(x, ops.tanh(ops.nn.softplus(x)))


def soft_shrink(x: Any, threshold: float = 0.5) -> Any:
    """Soft thresholding."""
    return ops.soft_shrink(x, threshold=threshold)


def sparse_plus(x: Any) -> Any:
    """Piecewise smooth softplus."""
    return ops.sparse_plus(x)


def sparse_sigmoid(x: Any) -> Any:
    """Piecewise-linear sigmoid ``clip((x + 1) / 2, 0, 1)``."""
    return ops.sparse_sigmoid(x)


def sparsemax(x: Any, axis: int = -1) -> Any:
    """Projection onto the probability simplex along ``axis``."""
    return ops.sparsemax(x, axis=axis)


def squareplus(x: Any, b: float = 4) -> Any:
    """``(x + sqrt(x**2 + b)) / 2``."""
    return ops.squareplus(x, b=b)


def tanh_shrink(x: Any) -> Any:
    """``x - tanh(x)``."""
    return ops.tanh_shrink(x)


def threshold(x: Any, threshold: float, default_value: float) -> Any:
    """``x`` where ``x > threshold``, else ``default_value``."""
    return ops.threshold(x, threshold, default_value)


NAMES = (
    "linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "sigmoid",
    "hard_sigmoid", "softplus", "softsign", "tanh", "lecun_tanh", "softmax", "log_softmax", "exponential",
    "celu", "glu", "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "log_sigmoid", "mish",
    "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink",
)

_FUNCTIONS: dict[str, Callable] = {name: globals()[name] for name in NAMES}


def standardize(identifier: Any, argument: str = "activation") -> str | Callable:
    """A valid activation name (``None`` means ``"linear"``), or a callable kept as is.

    Raises:
        ValueError: an unknown name; the message lists the valid ones.
    """
    if identifier is None:
        return "linear"
    if isinstance(identifier, str):
        if identifier not in _FUNCTIONS:
            raise ValueError(f"{argument}: unknown activation {identifier!r}{_did_you_mean(identifier, NAMES)}; "
                             f"expected one of {NAMES}")
        return identifier
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
        return name if name in _FUNCTIONS and _FUNCTIONS[name] is identifier else identifier
    raise TypeError(f"{argument}: expected an activation name or a function, received {identifier!r}")


def get(identifier: Any) -> Callable[[Any], Any]:
    """The activation function for a name, ``None`` (linear) or a callable."""
    standardized = standardize(identifier)
    return _FUNCTIONS[standardized] if isinstance(standardized, str) else standardized


def serialize(activation: Any) -> str:
    """The name of a built-in activation (Keras's ``activations.serialize``).

    Raises:
        ValueError: a function that is not one of this module's activations.
    """
    name = standardize(activation)
    if not isinstance(name, str):
        raise ValueError(f"activations.serialize: {activation!r} is not a built-in activation; register a custom "
                         "function with @ember.saving.register_serializable() and save it by its registered name")
    return name


def deserialize(config: Any, custom_objects: dict | None = None) -> Callable:
    """The activation function for a name (or ``{"class_name": name}``), looked up in ``custom_objects`` first."""
    name = config.get("class_name", config.get("config")) if isinstance(config, dict) else config
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)
