"""Keras's functional merge helpers: ``layers.add([a, b])`` is ``layers.Add()([a, b])``.

On symbolic tensors (``ember.Input``) each helper adds a node to the functional graph;
on arrays it builds the layer and applies it at once, as Keras's eager call does.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> x = ember.Input((2,))
    >>> model = ember.Model(x, layers.maximum([x, layers.multiply([x, x])]))
    >>> ops.to_numpy(model(ops.convert_to_tensor([[0.5, 2.0]]))).tolist()
    [[0.5, 4.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.merge.add import Add
from ember.layers.merge.average import Average
from ember.layers.merge.concatenate import Concatenate
from ember.layers.merge.dot import Dot
from ember.layers.merge.maximum import Maximum
from ember.layers.merge.minimum import Minimum
from ember.layers.merge.multiply import Multiply
from ember.layers.merge.subtract import Subtract
from ember.symbolic import is_symbolic

__all__ = ["add", "average", "concatenate", "dot", "maximum", "minimum", "multiply", "subtract"]


def _merge(layer: Any, inputs: Any) -> Any:
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"layers.{type(layer).__name__.lower()}: inputs must be a list of tensors, "
                        f"received {type(inputs).__name__}")
    if any(is_symbolic(x) for x in inputs):
        return layer(list(inputs))
    arrays = [x if ops.is_array(x) else ops.convert_to_tensor(x) for x in inputs]
    output, _ = layer.apply(layer.build([tuple(ops.shape(x)) for x in arrays]), arrays)
    return output


def add(inputs: Any, **kwargs: Any) -> Any:
    """Element-wise sum of ``inputs`` (the :class:`Add` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.add([ops.ones((1, 2)), ops.ones((1, 2))])).tolist()
        [[2.0, 2.0]]
    """
    return _merge(Add(**kwargs), inputs)


def average(inputs: Any, **kwargs: Any) -> Any:
    """Element-wise mean of ``inputs`` (the :class:`Average` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.average([ops.ones((1, 2)), ops.zeros((1, 2))])).tolist()
        [[0.5, 0.5]]
    """
    return _merge(Average(**kwargs), inputs)


def concatenate(inputs: Any, axis: int = -1, **kwargs: Any) -> Any:
    """``inputs`` joined along ``axis`` (the :class:`Concatenate` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.concatenate([ops.ones((1, 1)), ops.zeros((1, 1))])).tolist()
        [[1.0, 0.0]]
    """
    return _merge(Concatenate(axis=axis, **kwargs), inputs)


def dot(inputs: Any, axes: Any = -1, normalize: bool = False, **kwargs: Any) -> Any:
    """Dot product of two inputs along ``axes`` (the :class:`Dot` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.dot([ops.ones((1, 2)), ops.ones((1, 2))], axes=1)).tolist()
        [[2.0]]
    """
    return _merge(Dot(axes=axes, normalize=normalize, **kwargs), inputs)


def maximum(inputs: Any, **kwargs: Any) -> Any:
    """Element-wise maximum of ``inputs`` (the :class:`Maximum` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.maximum([ops.ones((1, 2)), ops.zeros((1, 2))])).tolist()
        [[1.0, 1.0]]
    """
    return _merge(Maximum(**kwargs), inputs)


def minimum(inputs: Any, **kwargs: Any) -> Any:
    """Element-wise minimum of ``inputs`` (the :class:`Minimum` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.minimum([ops.ones((1, 2)), ops.zeros((1, 2))])).tolist()
        [[0.0, 0.0]]
    """
    return _merge(Minimum(**kwargs), inputs)


def multiply(inputs: Any, **kwargs: Any) -> Any:
    """Element-wise product of ``inputs`` (the :class:`Multiply` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.multiply([ops.ones((1, 2)), ops.zeros((1, 2))])).tolist()
        [[0.0, 0.0]]
    """
    return _merge(Multiply(**kwargs), inputs)


def subtract(inputs: Any, **kwargs: Any) -> Any:
    """``inputs[0] - inputs[1]`` (the :class:`Subtract` layer).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(layers.subtract([ops.ones((1, 2)), ops.ones((1, 2))])).tolist()
        [[0.0, 0.0]]
    """
    return _merge(Subtract(**kwargs), inputs)
