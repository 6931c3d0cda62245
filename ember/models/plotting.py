"""``plot_model`` / ``model_to_dot``: a drawing of a model's layer graph.

The graph (one box per layer, an arrow per connection, shapes, dtypes, activations and
trainability optional) is described once by :func:`layer_graph`; it is written as Graphviz
DOT source (:func:`dot_source`, a ``.dot`` file), rendered by Graphviz's ``dot`` program through
pydot when ``dot`` is installed, or else drawn with matplotlib (a layered layout), so a PNG,
SVG or PDF comes out either way. pydot and matplotlib are the ``[plot]`` extra.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.models.plotting import dot_source, layer_graph
    >>> ember.set_backend("numpy")
    >>> x = ember.Input((3,), name="x")
    >>> model = ember.Model(x, layers.Dense(2, name="out")(x))
    >>> graph = layer_graph(model, show_shapes=True)
    >>> [node.label for node in graph.nodes]
    ['x (InputLayer)\\nOutput shape: (None, 3)', 'out (Dense)\\nInput shape: (None, 3)\\nOutput shape: (None, 2)']
    >>> graph.edges
    [('x', 'out')]
    >>> print(dot_source(graph).splitlines()[0])
    digraph G {
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pathlib
import shutil
from typing import Any

import optree

from ember.models.model import Model
from ember.models.sequential import Sequential
from ember.symbolic import SymbolicTensor

RANKDIRS = ("TB", "LR", "BT", "RL")


@dataclasses.dataclass(frozen=True)
class GraphNode:
    """One box: a unique id (nested layers: ``outer/inner``) and its text."""

    id: str
    label: str
    cluster: str | None = None


@dataclasses.dataclass
class LayerGraph:
    """The boxes and arrows of a drawing, and its direction."""

    nodes: list[GraphNode]
    edges: list[tuple[str, str]]
    rankdir: str = "TB"


@dataclasses.dataclass(frozen=True)
class _Options:
    show_shapes: bool
    show_dtype: bool
    show_layer_names: bool
    expand_nested: bool
    show_layer_activations: bool
    show_trainable: bool


def _format_shape(shapes: list) -> str:
    shapes = [tuple(s) for s in shapes]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def _label(layer: Any, inputs: list, outputs: list, dtypes_: list, options: _Options) -> str:
    kind = type(layer).__name__
    lines = [f"{layer.name} ({kind})" if options.show_layer_names else kind]
    if options.show_layer_activations and isinstance(getattr(layer, "activation", None), str):
        lines.append(f"Activation: {layer.activation}")
    if options.show_shapes:
        if inputs:
            lines.append(f"Input shape: {_format_shape(inputs)}")
        if outputs:
            lines.append(f"Output shape: {_format_shape(outputs)}")
    if options.show_dtype and dtypes_:
        lines.append(f"Output dtype: {dtypes_[0] if len(set(dtypes_)) == 1 else dtypes_}")
    if options.show_trainable:
        lines.append(f"Trainable: {layer.trainable}")
    return "\n".join(lines)


def _sequential_calls(model: Sequential) -> list[tuple[Any, list, list, list]]:
    shape = model._known_input_shape()
    calls: list[tuple[Any, list, list, list]] = []
    if model._input_layer is not None:
        input_layer = model._input_layer
        calls.append((input_layer, [], [input_layer.batch_shape], [input_layer.dtype or "float32"]))
    for layer in model.layers:
        output = layer.compute_output_shape(shape) if shape is not None else None
        calls.append((layer, [shape] if shape is not None else [], [output] if output is not None else [], []))
        shape = output
    return calls


def _add_model(model: Any, options: _Options, prefix: str, nodes: list, edges: list) -> tuple[list, list]:
    """Add ``model``'s boxes/arrows; returns the ids of its entry boxes and of its exit boxes."""
    def expanded(layer: Any) -> bool:
        return options.expand_nested and isinstance(layer, Model)

    entries: dict[str, tuple[list, list]] = {}
    seen: set[str] = set()

    def add_layer(layer: Any, inputs: list, outputs: list, dtypes_: list) -> None:
        ident = prefix + layer.name
        if ident in seen:
            return
        seen.add(ident)
        if expanded(layer):
            entries[ident] = _add_model(layer, options, ident + "/", nodes, edges)
        else:
            nodes.append(GraphNode(ident, _label(layer, inputs, outputs, dtypes_, options), prefix.rstrip("/") or None))
            entries[ident] = ([ident], [ident])

    def connect(source: Any, target: Any) -> None:
        for tail in entries[prefix + source.name][1]:
            for head in entries[prefix + target.name][0]:
                if (tail, head) not in edges:
                    edges.append((tail, head))

    if isinstance(model, Sequential):
        calls = _sequential_calls(model)
        for layer, inputs, outputs, dtypes_ in calls:
            add_layer(layer, inputs, outputs, dtypes_)
        for (previous, *_), (layer, *_) in itertools.pairwise(calls):
            connect(previous, layer)
        ids = [prefix + layer.name for layer, *_ in calls]
        return entries[ids[0]][0] if ids else [], entries[ids[-1]][1] if ids else []
    for tensor in model._input_list:
        add_layer(tensor.node.layer, [], [tensor.shape], [tensor.dtype])
    for node in model._nodes:
        parents = [t for t in _tensors(node) if t is not None]
        add_layer(node.layer, [t.shape for t in parents], [t.shape for t in node.outputs],
                  [t.dtype for t in node.outputs])
        for parent in parents:
            connect(parent.node.layer, node.layer)
    heads = [i for t in model._input_list for i in entries[prefix + t.node.layer.name][0]]
    tails = [i for t in model._output_list for i in entries[prefix + t.node.layer.name][1]]
    return heads, tails


def _tensors(node: Any) -> list:
    tree: Any = [node.inputs, node.kwargs]
    leaves = optree.tree_leaves(tree, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    return [t for t in leaves if isinstance(t, SymbolicTensor)]


def layer_graph(model: Any, show_shapes: bool = False, show_dtype: bool = False, show_layer_names: bool = True,
                rankdir: str = "TB", expand_nested: bool = False, show_layer_activations: bool = False,
                show_trainable: bool = False) -> LayerGraph:
    """The boxes and arrows of a drawing of ``model`` (see :func:`plot_model` for the arguments).

    Raises:
        TypeError: ``model`` is not an ``ember.Model``/``Sequential``.
        ValueError: a bad ``rankdir``.
    """
    if not isinstance(model, Model):
        raise TypeError(f"plot_model: model must be an ember.Model or Sequential, received {type(model).__name__}")
    if rankdir not in RANKDIRS:
        raise ValueError(f"plot_model: rankdir must be one of {RANKDIRS}, received {rankdir!r}")
    options = _Options(show_shapes, show_dtype, show_layer_names, expand_nested, show_layer_activations,
                       show_trainable)
    nodes: list[GraphNode] = []
    edges: list[tuple[str, str]] = []
    _add_model(model, options, "", nodes, edges)
    return LayerGraph(nodes, edges, rankdir)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_source(graph: LayerGraph, dpi: int = 200) -> str:
    """Graphviz DOT text of a :class:`LayerGraph` (nested models' layers in clusters)."""
    lines = ["digraph G {", f"  rankdir={graph.rankdir};", f"  dpi={int(dpi)};", "  concentrate=true;",
             '  node [shape=record, fontname="Helvetica"];']
    clusters: dict[str | None, list[GraphNode]] = {}
    for node in graph.nodes:
        clusters.setdefault(node.cluster, []).append(node)
    for index, (cluster, members) in enumerate(clusters.items()):
        indent = "  "
        if cluster is not None:
            lines.append(f"  subgraph cluster_{index} {{")
            lines.append(f"    label={_quote(cluster)};")
            indent = "    "
        for node in members:
            lines.append(f"{indent}{_quote(node.id)} [label={_quote(node.label)}];")
        if cluster is not None:
            lines.append("  }")
    for tail, head in graph.edges:
        lines.append(f"  {_quote(tail)} -> {_quote(head)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def model_to_dot(model: Any, show_shapes: bool = False, show_dtype: bool = False, show_layer_names: bool = True,
                 rankdir: str = "TB", expand_nested: bool = False, dpi: int = 200,
                 show_layer_activations: bool = False, show_trainable: bool = False) -> Any:
    """The model's graph as a ``pydot.Dot`` (as Keras returns).

    Raises:
        ImportError: pydot is not installed (``pip install "ember[plot]"``).
    """
    try:
        import pydot
    except ImportError:
        raise ImportError('model_to_dot needs pydot: pip install "ember[plot]"') from None
    graph = layer_graph(model, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested,
                        show_layer_activations, show_trainable)
    parsed = pydot.graph_from_dot_data(dot_source(graph, dpi))
    if not parsed:
        raise RuntimeError("model_to_dot: pydot could not parse the generated DOT source")
    (dot,) = parsed
    return dot


def _depths(graph: LayerGraph) -> dict[str, int]:
    depth = {node.id: 0 for node in graph.nodes}
    for _ in range(len(graph.nodes)):  # longest path from a source; the graph is acyclic
        changed = False
        for tail, head in graph.edges:
            if depth[head] < depth[tail] + 1:
                depth[head] = depth[tail] + 1
                changed = True
        if not changed:
            break
    return depth


def draw_with_matplotlib(graph: LayerGraph, path: pathlib.Path, dpi: int) -> None:
    """Draw a :class:`LayerGraph` as boxes in layers (by longest path from the inputs) with arrows."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('plot_model needs matplotlib (or Graphviz with pydot): pip install "ember[plot]"') from None
    depth = _depths(graph)
    rows: dict[int, list[str]] = {}
    for node in graph.nodes:
        rows.setdefault(depth[node.id], []).append(node.id)
    labels = {node.id: node.label for node in graph.nodes}
    widest = max((len(line) for label in labels.values() for line in label.split("\n")), default=10)
    tallest = max((label.count("\n") + 1 for label in labels.values()), default=1)
    box_w, box_h = 0.1 * widest + 0.6, 0.28 * tallest + 0.3
    step_x, step_y = box_w + 0.6, box_h + 0.7
    horizontal = graph.rankdir in ("LR", "RL")
    positions = {}
    for level, ids in rows.items():
        for i, ident in enumerate(ids):
            across = (i - (len(ids) - 1) / 2) * (step_y if horizontal else step_x)
            along = level * (step_x if horizontal else step_y)
            along = -along if graph.rankdir in ("TB", "RL") else along
            positions[ident] = (along, across) if horizontal else (across, along)
    xs = [p[0] for p in positions.values()] or [0.0]
    ys = [p[1] for p in positions.values()] or [0.0]
    width = max(xs) - min(xs) + box_w + 0.4
    height = max(ys) - min(ys) + box_h + 0.4
    figure = Figure(figsize=(width, height))
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(min(xs) - box_w / 2 - 0.2, max(xs) + box_w / 2 + 0.2)
    ax.set_ylim(min(ys) - box_h / 2 - 0.2, max(ys) + box_h / 2 + 0.2)
    ax.axis("off")
    for tail, head in graph.edges:
        ax.annotate("", xy=positions[head], xytext=positions[tail],
                    arrowprops={"arrowstyle": "->", "shrinkA": 28, "shrinkB": 28, "color": "0.3"})
    for ident, (x, y) in positions.items():
        ax.text(x, y, labels[ident], ha="center", va="center", fontsize=9, family="sans-serif",
                bbox={"boxstyle": "round,pad=0.4", "facecolor": "#eef3fb", "edgecolor": "0.3"})
    figure.savefig(path, dpi=dpi)


def plot_model(model: Any, to_file: Any = "model.png", show_shapes: bool = False, show_dtype: bool = False,
               show_layer_names: bool = True, rankdir: str = "TB", expand_nested: bool = False, dpi: int = 200,
               show_layer_activations: bool = False, show_trainable: bool = False) -> pathlib.Path:
    """Draw ``model``'s layer graph to ``to_file``.

    Args:
        model: an ``ember.Model`` or ``Sequential``.
        to_file: ``.dot`` writes the DOT source; ``.png``/``.svg``/``.pdf`` (any format Graphviz or
            matplotlib writes) an image: rendered by Graphviz's ``dot`` when installed, else by matplotlib.
        show_shapes: input/output shapes in each box.
        show_dtype: output dtypes.
        show_layer_names: ``name (Class)`` instead of the class alone.
        rankdir: ``"TB"`` (top to bottom), ``"LR"``, ``"BT"`` or ``"RL"``.
        expand_nested: draw the layers of nested models (in a cluster) instead of one box.
        dpi: resolution of raster images.
        show_layer_activations: the activation of layers that have one.
        show_trainable: whether each layer is trainable.

    Returns:
        The path written.

    Example:
        >>> import pathlib, tempfile
        >>> import ember
        >>> from ember import layers
        >>> from ember.utils import plot_model
        >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(3), layers.Dense(1)])
        >>> path = plot_model(model, pathlib.Path(tempfile.mkdtemp()) / "model.png", show_shapes=True, dpi=50)
        >>> path.stat().st_size > 0
        True
    """
    graph = layer_graph(model, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested,
                        show_layer_activations, show_trainable)
    path = pathlib.Path(to_file)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"plot_model: the directory {str(path.parent)!r} does not exist")
    suffix = path.suffix.lower().lstrip(".")
    if not suffix:
        raise ValueError(f"plot_model: to_file needs a suffix that names the format (.png, .svg, .pdf, .dot), "
                         f"received {os.fspath(to_file)!r}")
    if suffix in ("dot", "gv"):
        path.write_text(dot_source(graph, dpi))
    elif shutil.which("dot") is not None and _has_pydot():
        model_to_dot(model, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested, dpi,
                     show_layer_activations, show_trainable).write(str(path), format=suffix)
    else:
        draw_with_matplotlib(graph, path, dpi)
    return path


def _has_pydot() -> bool:
    try:
        import pydot  # noqa: F401
    except ImportError:
        return False
    return True
