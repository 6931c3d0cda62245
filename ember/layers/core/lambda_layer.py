"""``Lambda``: wrap a function of the inputs as a layer."""

from __future__ import annotations

from typing import Any

import optree

from ember import backends, dtypes, ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import empty_state
from ember.serialization import registered_function_name
from ember.symbolic import is_shape

# Sizes substituted for unknown (None) dimensions when the output shape is inferred by
# running the function; two probes tell which output dimensions follow the unknown ones.
_PROBE_SIZES = (2, 3)


def _shape_structure(value: Any, argument: str) -> Any:
    """A shape (tuple of ints/None) or a list/dict of shapes, from tuples or JSON lists."""
    if isinstance(value, (list, tuple)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in value
    ):
        return tuple(value)
    if isinstance(value, (list, tuple)):
        return [_shape_structure(v, argument) for v in value]
    if isinstance(value, dict):
        return {k: _shape_structure(v, argument) for k, v in value.items()}
    raise TypeError(f"{argument}: expected a shape tuple (or a list/dict of them) or a function, received {value!r}")


def _function_label(function: Any) -> str:
    return getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or repr(function)


class Lambda(DeclarativeLayer):
    """Wraps a pure function of the inputs (no variables) as a layer.

    Args:
        function: ``function(inputs, **arguments)`` built from ``ember.ops`` (so it
            runs on every backend); ``inputs`` is one array or the list/dict the
            layer is called with.
        output_shape: the output shape *without* the batch dimension (a tuple, or a
            list/dict of tuples for several outputs; the batch size is taken from
            the input), or a function ``input_shape -> output_shape`` (batch
            included). When None, the shape is inferred by running ``function`` once
            on small zero arrays on the NumPy backend.
        arguments: optional dict of keyword arguments passed to ``function``.

    A config can be saved only when ``function`` (and a callable ``output_shape``)
    is registered with ``@ember.saving.register_serializable()``: functions are saved
    by name, never as code, and must be registered again before loading.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> @ember.saving.register_serializable(package="doc")
        ... def double(x):
        ...     return ops.multiply(x, 2.0)
        >>> layer = layers.Lambda(double)
        >>> layer.compute_output_shape((None, 3))
        (None, 3)
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.ones((1, 3)))
        >>> ops.to_numpy(y).tolist()
        [[2.0, 2.0, 2.0]]
        >>> layer.get_config()["function"]
        {'class_name': 'doc>double', 'config': None}
    """

    function: Any
    output_shape: Any = None
    arguments: dict | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not callable(self.function) or isinstance(self.function, type):
            raise TypeError(f"{self.name}: function must be a function, received {self.function!r}")
        if self.output_shape is not None and not callable(self.output_shape):
            self._normalize("output_shape", _shape_structure(self.output_shape, f"{self.name}: output_shape"))
        if self.arguments is not None:
            if not isinstance(self.arguments, dict) or not all(isinstance(k, str) for k in self.arguments):
                raise TypeError(f"{self.name}: arguments must be a dict with str keys, received {self.arguments!r}")
            self._normalize("arguments", dict(self.arguments))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        return empty_state()

    def call(self, params: dict, inputs: Any) -> Any:
        return self.function(inputs, **(self.arguments or {}))

    def compute_output_shape(self, input_shape: Any) -> Any:
        if callable(self.output_shape):
            return _shape_structure(self.output_shape(input_shape), f"{self.name}: output_shape(...)")
        if self.output_shape is not None:
            leaves = optree.tree_leaves(input_shape, is_leaf=is_shape, none_is_leaf=False)
            batch = leaves[0][0] if leaves and leaves[0] else None
            return optree.tree_map(lambda shape: (batch,) + shape, self.output_shape, is_leaf=is_shape,
                                   none_is_leaf=False)
        return self._infer_output_shape(input_shape)

    def _infer_output_shape(self, input_shape: Any) -> Any:
        probes = []
        with backends.using_backend("numpy"):
            for size in _PROBE_SIZES:
                def zeros(shape: tuple, size: int = size) -> Any:
                    return ops.zeros(tuple(size if d is None else d for d in shape), dtype=dtypes.floatx())

                try:
                    inputs = optree.tree_map(zeros, input_shape, is_leaf=is_shape, none_is_leaf=False)
                    outputs = self.function(inputs, **(self.arguments or {}))
                    probes.append(optree.tree_map(lambda y: tuple(ops.shape(y)), outputs, none_is_leaf=False))
                except Exception as error:  # any failure of the user's function
                    raise ValueError(
                        f"layer {self.name!r} (Lambda) could not infer its output shape by running "
                        f"{_function_label(self.function)} on zeros of shape {input_shape} "
                        f"({type(error).__name__}: {error}); pass output_shape=..."
                    ) from error

        def merge(a: tuple, b: tuple) -> tuple:
            if len(a) != len(b):
                return tuple(None for _ in b)
            return tuple(x if x == y else None for x, y in zip(a, b))

        return optree.tree_map(merge, probes[0], probes[1], is_leaf=is_shape, none_is_leaf=False)

    def get_config(self) -> dict:
        for field in ("function", "output_shape"):
            value = getattr(self, field)
            if callable(value) and registered_function_name(value) is None:
                raise TypeError(
                    f"Lambda {self.name!r}: cannot save its {field} {_function_label(value)} in a config: "
                    "decorate it with @ember.saving.register_serializable() (functions are saved by "
                    "name, never as code) and register it again before loading"
                )
        return super().get_config()
