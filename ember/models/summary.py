"""``model.summary()``: a table of layers, output shapes and parameter counts.

Functional models get a fourth column, "Connected to", naming the layers whose outputs each
layer reads (as in Keras); a ``Sequential`` model's order already says it.

Example:
    >>> import ember
    >>> from ember import layers
    >>> a, b = ember.Input((4,), name="a"), ember.Input((5,), name="b")
    >>> merged = layers.Concatenate(name="merge")([layers.Dense(3, name="da")(a), b])
    >>> ember.Model([a, b], layers.Dense(1, name="out")(merged), name="net").summary(line_length=100)
    Model: "net"
    ====================================================================================================
    Layer (type)                 Output Shape             Param #       Connected to
    ====================================================================================================
    a (InputLayer)               (None, 4)                0             -
    b (InputLayer)               (None, 5)                0             -
    da (Dense)                   (None, 3)                15            a
    merge (Concatenate)          (None, 8)                0             da, b
    out (Dense)                  (None, 1)                9             merge
    ====================================================================================================
    Total params: 24
    Trainable params: 24
    Non-trainable params: 0
    ----------------------------------------------------------------------------------------------------
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree

from ember import ops


def _count(tree: Any) -> int:
    return int(sum(ops.size(leaf) for leaf in optree.tree_leaves(tree)))


def _output_shape_text(model: Any, layer: Any) -> str:
    shapes: list[Any] = []
    for node in getattr(model, "_nodes", []):
        if node.layer is layer:
            shapes.extend(str(t.shape) for t in node.outputs)
    for tensor in getattr(model, "_input_list", []):
        if tensor.node.layer is layer:
            shapes.append(str(tensor.shape))
    if not shapes and hasattr(model, "_layer_output_shapes"):
        shapes = [str(s) for s in model._layer_output_shapes().get(layer.name, [])]
    return ", ".join(dict.fromkeys(shapes)) or "?"


def _connected_to_text(model: Any, layer: Any) -> str:
    """The layers whose outputs ``layer`` reads, in call order (``-`` for an input layer)."""
    names = [tensor.node.layer.name for node in model._nodes if node.layer is layer
             for tensor in node.input_tensors()]
    return ", ".join(dict.fromkeys(names)) or "-"


def summary(model: Any, print_fn: Callable[[str], Any] = print, line_length: int = 88,
            show_trainable: bool = False) -> None:
    """Print name (type), output shape and params per layer (and, for functional models, the
    layers each one reads; with ``show_trainable``, Keras's "Trainable" column: ``Y``/``N`` for a
    layer with weights, ``-`` for one without), then trainable / non-trainable totals."""
    try:
        state = model.state if model.state is not None else model.placeholder_state()
    except ValueError:  # no input shape yet (Keras prints what it knows: layers, "0 (unbuilt)")
        state = None
    keys = {id(layer): key for key, layer in model._state_children().items()}
    connected = not getattr(model, "_linear_stack", False) and hasattr(model, "_nodes")
    if isinstance(line_length, bool) or not isinstance(line_length, int) or line_length <= 0:
        raise ValueError(f"summary: line_length must be a positive int, received {line_length!r}")
    if not callable(print_fn):
        raise TypeError(f"summary: print_fn must be callable, received {print_fn!r}")
    columns: tuple[int, ...] = (max(30, line_length // 3), max(26, line_length // 3), 14)
    if connected:
        columns = (max(24, line_length * 29 // 100), max(20, line_length // 4), 14,
                   max(20, line_length - line_length * 29 // 100 - line_length // 4 - 14))
    if show_trainable:
        columns += (11,)
    rule = "-" * sum(columns)

    def row(*cells: str) -> str:
        return "".join(str(c)[: w - 1].ljust(w) for c, w in zip(cells, columns)).rstrip()

    print_fn(f'Model: "{model.name}"')
    print_fn("=" * sum(columns))
    header = ["Layer (type)", "Output Shape", "Param #"] + (["Connected to"] if connected else [])
    print_fn(row(*header, *(["Trainable"] if show_trainable else [])))
    print_fn("=" * sum(columns))
    trainable = non_trainable = 0
    for layer in model.layers:
        key = keys.get(id(layer), layer.name)
        params = {} if state is None else state["params"].get(key, {})
        buffers = {} if state is None else state["buffers"].get(key, {})
        n_params, n_buffers = _count(params), _count(buffers)
        if layer.trainable and model.trainable:
            trainable += n_params
        else:
            non_trainable += n_params
        non_trainable += n_buffers
        count = f"{n_params + n_buffers:,}" if state is not None else "0 (unbuilt)"
        cells = [f"{layer.name} ({type(layer).__name__})", _output_shape_text(model, layer), count]
        if connected:
            cells.append(_connected_to_text(model, layer))
        if show_trainable:
            cells.append(("Y" if layer.trainable else "N") if n_params + n_buffers else "-")
        print_fn(row(*cells))
    print_fn("=" * sum(columns))
    print_fn(f"Total params: {trainable + non_trainable:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {non_trainable:,}")
    print_fn(rule)
