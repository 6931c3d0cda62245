"""``TimeDistributed``: apply one layer to every time step of a sequence."""

from __future__ import annotations

import inspect
from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer, Layer
from ember.symbolic import is_shape


class TimeDistributed(DeclarativeLayer):
    """Applies ``layer`` to each slice ``inputs[:, t]`` with the same weights.

    The ``(batch, time, ...)`` input is reshaped to ``(batch * time, ...)``, run
    through ``layer`` in one call, and reshaped back to ``(batch, time, ...)``.

    State: the wrapped layer's state as is (no extra nesting), so
    ``TimeDistributed(Dense(4))`` has ``state["params"]["kernel"]``. A ``mask``
    ``(batch, time)`` is passed on to the wrapped layer (reshaped to
    ``(batch * time,)``) when its ``apply`` accepts one, and passed through.

    Args:
        layer: the layer to apply at every time step (single input and output).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> td = layers.TimeDistributed(layers.Dense(4))
        >>> state = td.build((None, 5, 3), seed=0)
        >>> ops.shape(state["params"]["kernel"]), ops.shape(td.apply(state, ops.ones((2, 5, 3)))[0])
        ((3, 4), (2, 5, 4))
    """

    layer: Any

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.layer, Layer):
            raise TypeError(f"{self.name}: layer must be a Layer, received {self.layer!r}")

    def _step_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape, min_rank=3)
        return (shape[0],) + shape[2:]

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape, min_rank=3)
        out = self.layer.compute_output_shape((shape[0],) + shape[2:])
        if not is_shape(out):
            raise ValueError(f"layer {self.name!r}: the wrapped layer {self.layer.name!r} must return a single "
                             f"output, its output shape is {out}")
        return (shape[0], shape[1]) + tuple(out[1:])

    def output_dtype(self, input_dtype: str) -> str:
        inner = getattr(self.layer, "output_dtype", None)
        return inner(input_dtype) if inner is not None else input_dtype

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        self.compute_output_shape(input_shape)
        return self.layer.build(self._step_shape(input_shape), seed)

    def regularization_losses(self, params: dict) -> list:
        """The wrapped layer's weight penalties (counted once, not per time step); none when frozen."""
        return self.layer.regularization_losses(params) if self.trainable else []

    def constraints(self) -> dict:
        """The wrapped layer's weight constraints (its state is the wrapper's, so the paths match)."""
        return self.layer.constraints() if self.trainable else {}

    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None,
              mask: Any = None) -> tuple[Any, dict]:
        shape = tuple(ops.shape(inputs))
        self.compute_output_shape(shape)
        batch, time = shape[:2]
        flat = ops.reshape(inputs, (batch * time,) + shape[2:])
        kwargs = {}
        if mask is not None and "mask" in inspect.signature(type(self.layer).apply).parameters:
            mask_shape = tuple(ops.shape(mask))
            if mask_shape[:2] != (batch, time):
                raise ValueError(f"layer {self.name!r}: mask must start with (batch, time) = {(batch, time)}, "
                                 f"received shape {mask_shape}")
            kwargs["mask"] = ops.reshape(mask, (batch * time,) + mask_shape[2:])
        out, state = self.layer.apply(state, flat, training=training, rng=rng, **kwargs)
        return ops.reshape(out, (batch, time) + tuple(ops.shape(out))[1:]), state
