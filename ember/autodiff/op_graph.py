"""The recorded graph: what ran under a tape, on what, in which order (every backend).

``GradientTape(record_graph=True)`` records every ``ember.ops`` call (and ``ember.Tensor``
operator) that consumes a watched source or a value computed from one, on every backend
(torch included: its ``ember.ops`` names are re-bound to recorders for the tape's
lifetime). Without the flag nothing is recorded and nothing is paid. The graph is kept
after ``gradient`` (it is separate from the engine that computes gradients) until
``tape.reset()``.

An :class:`OpGraph` holds:

* ``sources``: the watched arrays, in watch order (:class:`SourceInfo`: slot, shape,
  dtype, device);
* ``nodes``: one :class:`OpNode` per recorded call, in execution order: the op's name,
  the slots of its tracked inputs and of its outputs, the shape/dtype/device of every
  array input and output, its order index and the wall-clock time (seconds since the
  tape began) when it returned. MLX is lazy: its times are those of graph construction;
* ``edges``: producer -> consumer pairs (``"source:k"`` or a node index, then a node
  index) with the slot carried.

Values are not kept (only identities, weakly, so :meth:`OpGraph.dependencies` can find
an output the caller still holds): recording does not extend any array's lifetime.

Export: :meth:`OpGraph.to_dict` / :meth:`OpGraph.to_json` (plain data),
:meth:`OpGraph.to_networkx` (a ``networkx.DiGraph``) and :meth:`OpGraph.to_dot`
(Graphviz DOT text).

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> x = ops.convert_to_tensor([1.0, 2.0])
    >>> with ember.GradientTape(record_graph=True) as tape:
    ...     tape.watch(x)
    ...     y = ops.sum(ops.square(x))
    >>> [node.op for node in tape.graph]
    ['square', 'sum']
    >>> tape.graph.dependencies(y)
    {0: [0, 1]}
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ember import backends


@dataclass(frozen=True)
class ArrayInfo:
    """Shape, dtype and device of one array."""

    shape: tuple
    dtype: str
    device: str


@dataclass(frozen=True)
class SourceInfo:
    """A watched source: its position in watch order, its slot and its array's description."""

    index: int
    slot: int
    array: ArrayInfo


@dataclass(frozen=True)
class OpNode:
    """One recorded op call (see the module docstring)."""

    index: int
    op: str
    inputs: tuple  # slot of each tracked array input, in argument order
    outputs: tuple  # slot of each array output
    input_arrays: tuple  # ArrayInfo of every array input (tracked or constant), in argument order
    output_arrays: tuple  # ArrayInfo of every array output
    time: float  # seconds since the tape began, when the op returned


@dataclass
class OpGraph:
    """A tape's recorded ops (see the module docstring)."""

    sources: list = field(default_factory=list)
    nodes: list = field(default_factory=list)

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, index: int) -> OpNode:
        return self.nodes[index]

    # --- structure ------------------------------------------------------------------
    def producers(self) -> dict:
        """slot -> ``"source:k"`` or the index of the node that produced it."""
        made: dict[int, Any] = {}
        for source in self.sources:
            made.setdefault(source.slot, f"source:{source.index}")
        for node in self.nodes:
            for slot in node.outputs:
                made[slot] = node.index
        return made

    @property
    def edges(self) -> list:
        """``(producer, consumer, slot)`` for every tracked input of every node."""
        made: dict[int, Any] = {}
        for source in self.sources:
            made.setdefault(source.slot, f"source:{source.index}")
        found = []
        for node in self.nodes:
            for slot in node.inputs:
                if slot in made:
                    found.append((made[slot], node.index, slot))
            for slot in node.outputs:
                made[slot] = node.index
        return found

    def dependencies(self, output: Any, slot: int | None = None) -> dict:
        """Which watched sources ``output`` depends on, and through which ops.

        Args:
            output: an array the tape recorded (still alive), or None with ``slot``.
            slot: the output's slot, instead of the array.

        Returns:
            ``{source index: [node indices on some path from that source to output]}``,
            in execution order; an output that no watched source reaches gives ``{}``.

        Raises:
            ValueError: ``output`` was not recorded by this graph.
        """
        if slot is None:
            slot = self._slot_of(output)
            if slot is None:
                raise ValueError(
                    "OpGraph.dependencies: this array was not recorded by the tape (it was not computed by "
                    "ember.ops from a watched source inside the tape, or it is no longer alive)"
                )
        result = {}
        for source in self.sources:
            path = self._path(source.slot, slot)
            if path is not None:
                result[source.index] = path
        return result

    def _path(self, source_slot: int, target_slot: int) -> list | None:
        if source_slot == target_slot:
            return []
        forward = {source_slot}
        reaching = []
        for node in self.nodes:
            if any(s in forward for s in node.inputs):
                forward.update(node.outputs)
                reaching.append(node)
        if target_slot not in forward:
            return None
        needed = {target_slot}
        kept = []
        for node in reversed(reaching):
            if any(s in needed for s in node.outputs):
                needed.update(node.inputs)
                kept.append(node.index)
        return sorted(kept)

    def _slot_of(self, array: Any) -> int | None:
        lookup = getattr(self, "_lookup", None)
        return None if lookup is None else lookup(array)

    # --- export -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The graph as plain data (lists, dicts, strings and numbers): JSON-serializable."""
        return {
            "sources": [asdict(s) | {"array": _array_dict(s.array)} for s in self.sources],
            "nodes": [
                {
                    "index": n.index,
                    "op": n.op,
                    "inputs": list(n.inputs),
                    "outputs": list(n.outputs),
                    "input_arrays": [_array_dict(a) for a in n.input_arrays],
                    "output_arrays": [_array_dict(a) for a in n.output_arrays],
                    "time": n.time,
                }
                for n in self.nodes
            ],
            "edges": [{"producer": p, "consumer": c, "slot": s} for p, c, s in self.edges],
        }

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kwargs)

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph``: nodes ``"source:k"`` and op indices with their attributes, edges with slots.

        Raises:
            ImportError: networkx is not installed (``pip install "ember[graph]"``).
        """
        try:
            import networkx as nx
        except ImportError:
            raise ImportError('OpGraph.to_networkx needs networkx: pip install "ember[graph]"') from None
        graph = nx.DiGraph()
        for source in self.sources:
            graph.add_node(f"source:{source.index}", kind="source", slot=source.slot, **_array_dict(source.array))
        for node in self.nodes:
            graph.add_node(node.index, kind="op", op=node.op, time=node.time,
                           output_shapes=[list(a.shape) for a in node.output_arrays])
        for producer, consumer, slot in self.edges:
            graph.add_edge(producer, consumer, slot=slot)
        return graph

    def to_dot(self, name: str = "tape") -> str:
        """Graphviz DOT text: sources as ellipses, ops as boxes labelled with the op and output shape."""
        lines = [f"digraph {json.dumps(name)} {{", "  rankdir=LR;"]
        for source in self.sources:
            label = f"source {source.index}\\n{_shape_text(source.array.shape)} {source.array.dtype}"
            lines.append(f'  "source:{source.index}" [shape=ellipse, label="{label}"];')
        for node in self.nodes:
            shapes = ", ".join(_shape_text(a.shape) for a in node.output_arrays)
            lines.append(f'  "{node.index}" [shape=box, label="{node.index}: {node.op}\\n{shapes}"];')
        for producer, consumer, slot in self.edges:
            lines.append(f'  "{producer}" -> "{consumer}" [label="{slot}"];')
        lines.append("}")
        return "\n".join(lines)


def _array_dict(info: ArrayInfo) -> dict:
    return {"shape": list(info.shape), "dtype": info.dtype, "device": info.device}


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


class GraphRecorder:
    """Fills an :class:`OpGraph` from the op calls :mod:`ember.autodiff.recording` offers it.

    It is an engine as far as the recording module is concerned (``record`` returns
    whether the call was kept), but computes nothing: the tape's own engine does.
    """

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.graph = OpGraph()
        self.graph._lookup = self.slot  # type: ignore[attr-defined]  # set on a recorder's graph only, read by getattr
        self._slot_of: dict[int, int] = {}
        self._refs: list = []
        self._next = 0
        self._paused = 0
        self._start = time.perf_counter()
        self._describe: tuple[Callable, Callable, Callable] | None = None

    def reset(self) -> None:
        self._clear()

    # --- slots -------------------------------------------------------------------------
    def slot(self, array: Any) -> int | None:
        return self._slot_of.get(id(getattr(array, "_native", array)))

    def _new_slot(self, array: Any) -> int:
        slot, self._next = self._next, self._next + 1
        key = id(array)
        table = self._slot_of
        table[key] = slot

        def forget(_: Any, key: int = key, slot: int = slot) -> None:
            if table.get(key) == slot:
                del table[key]

        try:
            self._refs.append(weakref.ref(array, forget))
        except TypeError:
            self._refs.append(array)
        return slot

    def _info(self, array: Any) -> ArrayInfo:
        if self._describe is None:
            core = backends.current().op_tables()["core"]
            self._describe = (core["shape"], core["dtype"], core["get_device"])
        shape, dtype, device = self._describe
        return ArrayInfo(tuple(int(d) for d in shape(array)), dtype(array), device(array))

    # --- the engine interface ------------------------------------------------------------
    def watch(self, native: Any) -> None:
        slot = self._slot_of.get(id(native))
        if slot is None:
            slot = self._new_slot(native)
        if any(s.slot == slot for s in self.graph.sources):
            return
        self.graph.sources.append(SourceInfo(len(self.graph.sources), slot, self._info(native)))

    def pause(self) -> None:
        self._paused += 1

    def resume(self) -> None:
        if self._paused:
            self._paused -= 1

    def record(self, name: str, function: Any, args: tuple, kwargs: dict, out: Any) -> bool:
        if self._paused:
            return False
        get = self._slot_of.get
        inputs, arrays = [], []
        for value in _flat_values(args, kwargs):
            slot = get(id(value))
            if slot is not None:
                inputs.append(slot)
            if _is_array(value):
                arrays.append(self._info(value))
        if not inputs:
            return False
        outs = list(out) if type(out) in (list, tuple) else [out]
        outputs = tuple(self._new_slot(o) for o in outs if _is_array(o))
        self.graph.nodes.append(OpNode(
            len(self.graph.nodes), name, tuple(inputs), outputs, tuple(arrays),
            tuple(self._info(o) for o in outs if _is_array(o)), time.perf_counter() - self._start,
        ))
        return True


def _flat_values(args: tuple, kwargs: dict) -> list:
    values = []
    for value in list(args) + list(kwargs.values()):
        if type(value) in (list, tuple):
            values.extend(value)
        else:
            values.append(value)
    return values
