"""``CategoryEncoding``: integer category ids to one-hot, multi-hot or count vectors."""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops
from ember.layers.layer import DeclarativeLayer

_MODES = ("one_hot", "multi_hot", "count")


def encode(ids: Any, depth: int, mode: str, dtype: str, weights: Any = None) -> Any:
    """``ids`` (rank 0-2; the last axis lists one sample's ids) encoded as ``mode`` vectors of ``depth``.

    ``one_hot`` of a ``(batch, 1)`` or ``(batch,)`` input gives ``(batch, depth)``; for rank 2
    ``(batch, k)`` it gives ``(batch, k, depth)`` as Keras.
    """
    ids = ops.cast(ids, "int32")
    if mode == "one_hot":
        if ops.ndim(ids) >= 1 and ops.shape(ids)[-1] == 1:
            ids = ops.squeeze(ids, -1)
        return ops.one_hot(ids, depth, dtype=dtype)
    if ops.ndim(ids) == 0:
        ids = ops.reshape(ids, (1,))
    hot = ops.one_hot(ids, depth, dtype=dtype)
    if mode == "multi_hot":
        return ops.max(hot, axis=-2)
    if weights is not None:
        hot = ops.multiply(hot, ops.expand_dims(ops.cast(weights, dtype), -1))
    return ops.sum(hot, axis=-2)


def encoded_shape(input_shape: tuple, depth: int, mode: str) -> tuple:
    if mode == "one_hot":
        if input_shape and input_shape[-1] == 1:
            input_shape = input_shape[:-1]
        return tuple(input_shape) + (depth,)
    return (tuple(input_shape[:-1]) if len(input_shape) > 1 else ()) + (depth,)


class CategoryEncoding(DeclarativeLayer):
    """Encodes integer ids in ``[0, num_tokens)`` (ids outside give all-zero rows).

    Args:
        num_tokens: number of categories.
        output_mode: ``"multi_hot"`` (1 for each id present in a sample's last axis),
            ``"one_hot"`` (one vector per id) or ``"count"`` (occurrences).
        sparse: must be False (Ember has no sparse arrays).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.CategoryEncoding(num_tokens=4, output_mode="count")
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor([[0, 3, 3]]))
        >>> ops.to_numpy(y).tolist()
        [[1.0, 0.0, 0.0, 2.0]]
    """

    num_tokens: int = None  # type: ignore[assignment]  # Keras's default None is rejected in __post_init__
    output_mode: str = "multi_hot"
    sparse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.num_tokens, bool) or not isinstance(self.num_tokens, int) or self.num_tokens < 1:
            raise ValueError(f"{self.name}: num_tokens must be a positive int, received {self.num_tokens!r}")
        if self.output_mode not in _MODES:
            raise ValueError(f"{self.name}: output_mode must be one of {_MODES}, received {self.output_mode!r}")
        if self.sparse:
            raise ValueError(f"{self.name}: sparse=True is not supported (Ember has no sparse arrays)")

    def call(self, params: dict, inputs: Any) -> Any:
        if dtypes.is_float(ops.dtype(inputs)) or ops.dtype(inputs) == "bool":
            raise TypeError(f"layer {self.name!r} expects integer category ids, received dtype {ops.dtype(inputs)}")
        return encode(inputs, self.num_tokens, self.output_mode, self.compute_dtype if self.dtype else dtypes.floatx())

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return encoded_shape(tuple(input_shape), self.num_tokens, self.output_mode)
