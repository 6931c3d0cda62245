"""``model.summary()``: a table of layers, output shapes and parameter counts."""

from __future__ import annotations

from typing import Any, Callable

import optree


def _count(tree: Any) -> int:
    from ember import ops

    return int(sum(ops.size(leaf) for leaf in optree.tree_leaves(tree)))


def _output_shape_text(model: Any, layer: Any) -> str:
    shapes = []
    for node in getattr(model, "_nodes", []):
        if node.layer is layer:
            shapes.extend(str(t.shape) for t in node.outputs)
    for tensor in getattr(model, "_input_list", []):
        if tensor.node.layer is layer:
            shapes.append(str(tensor.shape))
    if not shapes and hasattr(model, "_layer_output_shapes"):
        shapes = [str(s) for s in model._layer_output_shapes().get(layer.name, [])]
    return ", ".join(dict.fromkeys(shapes)) or "?"


def summary(model: Any, print_fn: Callable[[str], Any] = print, line_length: int = 88) -> None:
    """Print name (type), output shape and params per layer, then trainable / non-trainable totals."""
    state = model.state if model.state is not None else model.placeholder_state()
    columns = (max(30, line_length // 3), max(26, line_length // 3), 14)
    rule = "-" * sum(columns)

    def row(*cells: str) -> str:
        return "".join(str(c)[: w - 1].ljust(w) for c, w in zip(cells, columns))

    print_fn(f'Model: "{model.name}"')
    print_fn("=" * sum(columns))
    print_fn(row("Layer (type)", "Output Shape", "Param #"))
    print_fn("=" * sum(columns))
    trainable = non_trainable = 0
    for layer in model.layers:
        params = state["params"].get(layer.name, {})
        buffers = state["buffers"].get(layer.name, {})
        n_params, n_buffers = _count(params), _count(buffers)
        if layer.trainable and model.trainable:
            trainable += n_params
        else:
            non_trainable += n_params
        non_trainable += n_buffers
        print_fn(row(f"{layer.name} ({type(layer).__name__})", _output_shape_text(model, layer), f"{n_params + n_buffers:,}"))
    print_fn("=" * sum(columns))
    print_fn(f"Total params: {trainable + non_trainable:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {non_trainable:,}")
    print_fn(rule)
