"""Clear errors for a state dict that does not fit its layer (``layer.apply(state, x)``).

A wrong state used to surface as internal errors (``KeyError: 'params'``, ``'NoneType'
object is not subscriptable``, ``KeyError: 'kernel'``) or as a shape error that blamed the
input when the kernel had the wrong shape. Two checks, both off the fast path:

* :func:`check_state_dict`: the top level, ``{"params": dict, "buffers": dict}`` (a few
  ``type`` tests per call);
* :func:`raise_if_mismatched`: only after the layer's computation failed, the given
  variables are compared by path with those the layer builds for the inputs' shapes
  (missing, unexpected, mis-shaped); a mismatch is raised in place of the original error,
  which is re-raised untouched when the state is fine.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> dense = layers.Dense(3, name="dense")
    >>> state = dense.build((None, 4), seed=0)
    >>> wrong = {"params": {"bias": state["params"]["bias"]}, "buffers": {}}  # no kernel
    >>> try:
    ...     dense.apply(wrong, np.ones((2, 4), "float32"))
    ... except ValueError as error:
    ...     print(error)  # doctest: +NORMALIZE_WHITESPACE
    layer 'dense' (Dense): the state does not match the layer for inputs of shape (2, 4):
    params/kernel is missing (expected shape (4, 3)) (the layer failed with KeyError: 'kernel')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree


def check_state_dict(layer: Any, state: Any) -> None:
    """``state`` is ``{"params": dict, "buffers": dict}`` (``TypeError``/``ValueError`` naming ``layer``)."""
    if type(state) is dict and type(state.get("params")) is dict and type(state.get("buffers")) is dict:
        return
    owner = describe(layer)
    if not isinstance(state, dict):
        raise TypeError(f"{owner}: state must be a dict {{'params': ..., 'buffers': ...}} (from layer.build), "
                        f"received {type(state).__name__}")
    missing = [key for key in ("params", "buffers") if key not in state]
    if missing:
        raise ValueError(f"{owner}: the state has no {' and no '.join(repr(k) for k in missing)} entry; expected a "
                         f"dict {{'params': ..., 'buffers': ...}} (from layer.build), received keys {sorted(state)}")
    for key in ("params", "buffers"):
        if not isinstance(state[key], dict):
            raise TypeError(f"{owner}: state[{key!r}] must be a dict of variables, received "
                            f"{type(state[key]).__name__}")


def describe(layer: Any) -> str:
    return f"layer {getattr(layer, 'name', '?')!r} ({type(layer).__name__})"


def _by_path(tree: dict, prefix: str) -> dict[str, Any]:
    paths, leaves, _ = optree.tree_flatten_with_path(tree)
    return {"/".join([prefix, *(str(p) for p in path)]): leaf for path, leaf in zip(paths, leaves)}


def _shape(value: Any) -> tuple | None:
    shape = getattr(value, "shape", None)
    return None if shape is None else tuple(int(d) for d in shape)


def mismatches(given: dict, expected: dict, limit: int = 4) -> list[str]:
    """Differences between two states by path: missing, unexpected and mis-shaped variables."""
    have = {**_by_path(given.get("params", {}), "params"), **_by_path(given.get("buffers", {}), "buffers")}
    want = {**_by_path(expected.get("params", {}), "params"), **_by_path(expected.get("buffers", {}), "buffers")}
    problems = [f"{path} is missing (expected shape {_shape(want[path])})" for path in want if path not in have]
    problems += [f"{path} is not a variable of this layer" for path in have if path not in want]
    for path in want:
        if path in have and _shape(have[path]) != _shape(want[path]):
            problems.append(f"{path} has shape {_shape(have[path])}, expected {_shape(want[path])}")
    if len(problems) > limit:
        problems = problems[:limit] + [f"... ({len(problems) - limit} more)"]
    return problems


def input_shapes(inputs: Any) -> Any:
    """The shapes of ``inputs`` (an array or a list/dict of arrays), as tuples."""
    if hasattr(inputs, "shape"):
        return _shape(inputs)
    return optree.tree_map(_shape, inputs, is_leaf=lambda v: hasattr(v, "shape"))


def raise_if_mismatched(layer: Any, state: Any, build: Callable[[], dict], input_shape: Any,
                        error: BaseException) -> None:
    """After ``layer`` failed on ``state`` with ``error``: raise a ``ValueError`` naming the variables
    that do not match what ``build()`` makes for ``input_shape``; return (to re-raise the original)
    when the state fits, or when ``error`` is already the layer's own explanation (it names the layer)."""
    name = getattr(layer, "name", None)
    if isinstance(error, (ValueError, TypeError)) and name and repr(name) in str(error):
        return
    try:
        expected = build()
    except Exception:  # noqa: BLE001 - the inputs themselves do not fit: the original error says so
        return
    if not isinstance(state, dict):
        return
    problems = mismatches(state, expected)
    if problems:
        raise ValueError(f"{describe(layer)}: the state does not match the layer for inputs of shape {input_shape}: "
                         + "; ".join(problems) + f" (the layer failed with {type(error).__name__}: {error})") from None
