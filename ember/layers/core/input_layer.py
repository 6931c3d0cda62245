"""``InputLayer`` and ``ember.Input``: where a functional model's graph starts."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.layers.layer import DeclarativeLayer
from ember.symbolic import Node, SymbolicTensor, record_node


def _check_shape(shape: Any, argument: str) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{argument}: expected a tuple of ints (None for unknown), received {shape!r}") from None
    for d in shape:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d < 0):
            raise ValueError(f"{argument}: dimensions must be non-negative ints or None, received {shape}")
    return shape


class InputLayer(DeclarativeLayer):
    """The layer behind :func:`Input`: declares the shape (without batch) and dtype of an input.

    Args:
        shape: shape of one example, e.g. ``(28, 28, 1)``; ``None`` marks unknown sizes.
        batch_size: a fixed batch size, or None.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([layers.InputLayer(shape=(3,)), layers.Dense(2)])
        >>> model.compute_output_shape((None, 3))
        (None, 2)
    """

    shape: tuple = ()
    batch_size: int | None = None
    _dtype_is_policy = False  # the dtype of the data, not a policy (Keras's inputs too)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shape", _check_shape(self.shape, f"{self.name}: shape"))

    @property
    def batch_shape(self) -> tuple:
        return (self.batch_size,) + tuple(self.shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return self.batch_shape

    def call(self, params: dict, inputs: Any) -> Any:
        return inputs


def Input(shape: Any = None, dtype: Any = None, name: str | None = None, batch_size: int | None = None,
          batch_shape: Any = None) -> SymbolicTensor:
    """A symbolic input of a functional model.

    Args:
        shape: shape of one example (no batch dimension).
        dtype: dtype of the data (default ``floatx()``).
        name: name of the input (used for dict inputs and in summaries).
        batch_size: optional fixed batch size.
        batch_shape: Keras's alternative to ``shape``/``batch_size``: the full shape, batch first.

    Raises:
        ValueError: neither or both of ``shape`` and ``batch_shape``, or ``batch_shape`` with
            ``batch_size``.

    Example:
        >>> import ember
        >>> inputs = ember.Input((3,), name="x")
        >>> inputs.shape, inputs.dtype
        ((None, 3), 'float32')
        >>> ember.Input(batch_shape=(8, 3)).shape
        (8, 3)
    """
    if batch_shape is not None:
        if shape is not None or batch_size is not None:
            raise ValueError(f"Input: give batch_shape or shape/batch_size, not both (received shape={shape!r}, "
                             f"batch_size={batch_size!r}, batch_shape={batch_shape!r})")
        batch_shape = _check_shape(batch_shape, "Input: batch_shape")
        if not batch_shape:
            raise ValueError("Input: batch_shape must include the batch dimension, received ()")
        shape, batch_size = batch_shape[1:], batch_shape[0]
    if shape is None:
        raise ValueError("Input: give shape (one example's shape) or batch_shape")
    layer = InputLayer(shape=shape, batch_size=batch_size, name=name, dtype=dtype)  # type: ignore[arg-type]  # None: generated
    return symbolic_input(layer)


def symbolic_input(layer: InputLayer) -> SymbolicTensor:
    """The symbolic tensor an :class:`InputLayer` produces."""
    node = Node(layer, None)
    dtype = dtypes.standardize_dtype(layer.dtype) if layer.dtype else dtypes.floatx()
    tensor = SymbolicTensor(layer.batch_shape, dtype, layer.name, node)
    node.outputs = [tensor]
    record_node(layer, node)
    return tensor
