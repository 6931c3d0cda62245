"""Ember's own reverse-mode engine for the NumPy backend.

While a :class:`~ember.GradientTape` records on NumPy, :mod:`ember.autodiff.recording`
offers every differentiable ``ember.ops`` call to :meth:`TapeEngine.record`, which keeps
it in a :class:`~ember.recorded.graph.RecordedGraph` when an input is tracked. Kept
results are handed back as :class:`~ember.autodiff.traced.TracedArray` views (the
``wrap_output`` hook), so NumPy operators and functions applied to them are recorded
too. :meth:`TapeEngine.gradient` takes the nodes between the sources and the targets
(``graph.relevant_nodes``), walks them backwards and applies each op's VJP rule from
:mod:`ember.autodiff.rules`, accumulating one cotangent per slot.

The rules are written with ``ember.ops``: when an outer tape records while an inner
tape computes its gradient (``create_graph``), the backward pass is itself recorded,
which gives higher-order derivatives (Hessian-vector products) through nested tapes.

When the tape cannot give a correct gradient it raises instead of guessing:

* a target that no recorded op produced and that is not a watched source raises
  ``ValueError`` (it was computed by NumPy operators on plain arrays, by ``float()`` /
  Python arithmetic, or it is a constant: the tape cannot tell these apart, and
  returning ``None`` or zeros for the first two would be a wrong gradient);
* a watched source whose gradient would miss a path because a recorded op consumed a
  plain NumPy *view* of it (``x[0]``, ``x.T``, ``x.reshape(...)`` on a plain array,
  invisible to the tape) raises ``ValueError`` naming the op;
* a source that the targets do not depend on through recorded ops gets ``None``
  (``zeros`` with ``unconnected_gradients="zero"``), as in TensorFlow. An integer or
  boolean result (``ops.cast(x, "int32")``, comparisons) carries no cotangent.

Gradients have the source's shape and dtype and are plain, writable ndarrays
(unless an outer tape records, when they are traced values that tape tracks).

Memory: the graph holds op results weakly, and a node keeps only the shape and dtype
of values its rule never reads (``vjp.SAVES``: e.g. the inputs of ``add``, the output of
``matmul``), so an intermediate such as the pre-bias ``x @ w`` is freed as soon as the
user's code drops it, as in a hand-written backward pass.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from ember import ops
from ember.autodiff import recording
from ember.autodiff import rules as _rules
from ember.autodiff.engines import register_own_engine
from ember.autodiff.rules import batched as _batched
from ember.autodiff.traced import TracedArray, traced_view
from ember.backends._common import UntrackedTargetError
from ember.recorded.graph import RecordedGraph, flat_slots

_CARRIES_GRADIENT = frozenset("fc")  # dtype kinds that carry a cotangent (and bfloat16, kind "V")


def _plain(x: Any) -> Any:
    if type(x) is TracedArray:
        plain = x._plain
        return x.view(np.ndarray) if plain is None else plain
    return x


def _plain_sequence(values: Any) -> Any:
    if any(type(v) is TracedArray for v in values):
        return type(values)(_plain(v) for v in values)
    return values


# ------------------------------------------------------------------ recording hooks
def prepare_args(args: tuple) -> tuple:
    """Traced arrays (also inside list/tuple arguments) as plain ndarrays for the backend's fast path."""
    out = None
    for i, arg in enumerate(args):
        kind = type(arg)
        if kind is TracedArray:
            if out is None:
                out = list(args)
            plain = arg._plain
            out[i] = arg.view(np.ndarray) if plain is None else plain
        elif kind is list or kind is tuple:
            converted = _plain_sequence(arg)
            if converted is not arg:
                if out is None:
                    out = list(args)
                out[i] = converted
    return args if out is None else tuple(out)


def wrap_output(out: Any) -> Any:
    """A recorded op's result viewed as :class:`TracedArray` (each array of a tuple/list result)."""
    kind = type(out)
    if kind is np.ndarray:
        view = out.view(TracedArray)
        view._plain = out
        return view
    if kind is tuple or kind is list:
        return kind(wrap_output(o) for o in out)
    if isinstance(out, np.generic):
        return traced_view(np.asarray(out))
    return out


# ------------------------------------------------------------------------- engine
def _carries_gradient(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return dtype is not None and (dtype.kind in _CARRIES_GRADIENT or dtype.name == "bfloat16")


class TapeEngine:
    """One NumPy tape's recorded graph and its reverse walker (see the module docstring)."""

    records_ops = True  # the tape offers it every op call while it records (ember.autodiff.recording)

    def __init__(self, persistent: bool) -> None:
        self.persistent = persistent
        self._graph = RecordedGraph(weak_outputs=True)
        # id(source) and id(source.base) -> (source slot, source)
        self._source_ids: dict[int, tuple[int, Any]] = {}
        self._suspicious: list[tuple[int, int, int]] = []  # (node index, argument, source slot)

    # --- recording state ---------------------------------------------------------------
    @property
    def graph(self) -> list:
        return self._graph.nodes

    def pause(self) -> None:
        recording.stop(self)

    def resume(self) -> None:
        recording.start(self)

    def watch(self, native: Any) -> None:
        graph = self._graph
        key = id(native)
        if key in graph.source_slots:
            return
        slot = graph.slot(native)
        if slot is not None:
            # Already tracked (an intermediate result): keep its slot so paths through it
            # still reach earlier sources.
            graph.source_slots[key] = slot
            graph.watched.append(native)
        else:
            graph.watch(native)
            slot = graph.source_slots[key]
        self._source_ids[key] = (slot, native)
        base = getattr(native, "base", None)
        if isinstance(base, np.ndarray):
            self._source_ids.setdefault(id(base), (slot, native))
            graph._keep.append(base)

    def record(self, name: str, function: Any, args: tuple, kwargs: dict, out: Any) -> bool:
        graph = self._graph
        if not graph.record(name, function, args, kwargs, out):
            return False
        node = graph.nodes[-1]
        sources = self._source_ids
        if sources and None in node.in_slots:  # some argument is untracked
            position = 0
            for arg, slot in zip(args, node.in_slots):
                if slot is None and type(arg) is np.ndarray:
                    base = arg.base
                    if base is not None:
                        source = sources.get(id(base))
                        if source is not None and not _same_values(arg, source[1]):
                            self._suspicious.append((node.index, position, source[0]))
                position += 1
        saves = _rules.SAVES.get(name)
        if saves is not None:
            # Keep only shape/dtype of values the rule never reads: the graph holds op
            # results weakly, so e.g. a matmul result that only fed a bias add is freed now.
            unread, reads_out = saves
            if unread:
                kept = list(args)
                for i in unread:
                    if i < len(kept) and isinstance(kept[i], np.ndarray):
                        kept[i] = _rules.Meta(kept[i])
                node.args = tuple(kept)
            if not reads_out and isinstance(out, np.ndarray):
                node.out = _rules.Meta(out)
        return True

    # --- queries -----------------------------------------------------------------------
    def _source_slot(self, source: Any) -> int | None:
        graph = self._graph
        slot = graph.source_slots.get(id(source))
        return graph.slot(source) if slot is None else slot

    def connected(self, target: Any, source: Any) -> bool:
        t_slot = self._graph.slot(target)
        s_slot = self._source_slot(source)
        if t_slot is None or s_slot is None:
            return False
        return t_slot == s_slot or bool(self._graph.relevant_nodes({s_slot}, {t_slot}))

    def release(self) -> None:
        if not self.persistent:
            self._graph.clear()
            self._suspicious = []

    def reset(self) -> None:
        self._graph.clear()
        self._source_ids = {}
        self._suspicious = []

    # --- the reverse walk --------------------------------------------------------------
    def gradient(self, targets: list, sources: list, output_gradients: list | None, keep: bool,
                 create_graph: bool) -> list:
        graph = self._graph
        source_slots = [self._source_slot(s) for s in sources]
        # Lists, not generators, in any()/all(): a generator left suspended is closed later, from
        # its deallocation, where a KeyboardInterrupt would be swallowed ("Exception ignored").
        if all([slot is None for slot in source_slots]):
            return [None] * len(sources)  # nothing requested was watched (TensorFlow: None)
        target_slots = []
        for position, target in enumerate(targets):
            slot = graph.slot(target)
            if slot is None:
                raise UntrackedTargetError(position, "numpy")
            target_slots.append(slot)
        self._check_views(source_slots, target_slots)

        wanted = {s for s in source_slots if s is not None}
        nodes = graph.relevant_nodes(wanted, set(target_slots)) if wanted else []

        # Seed the targets' cotangents.
        cots: dict[int, Any] = {}
        for position, (target, slot) in enumerate(zip(targets, target_slots)):
            if not _carries_gradient(target):
                continue
            if output_gradients is None or output_gradients[position] is None:
                seed = ops.ones_like(target if create_graph else _plain(target))
            else:
                seed = output_gradients[position]
                if not create_graph:
                    seed = np.asarray(_plain(seed))
                if tuple(np.shape(seed)) != tuple(target.shape):
                    raise ValueError(
                        f"GradientTape.gradient: output_gradients[{position}] has shape {tuple(np.shape(seed))} "
                        f"but its target has shape {tuple(target.shape)}"
                    )
            _accumulate(cots, slot, seed, target, ops)

        forward = set(wanted)
        for node in nodes:
            forward.update(flat_slots(node.out_slots))
        _walk(nodes, cots, forward, wanted, create_graph)

        grads = []
        seen: set[int] = set()
        for position, (_source, slot) in enumerate(zip(sources, source_slots)):
            grad = None if slot is None else cots.get(slot)
            if grad is None and slot is not None and slot not in target_slots:
                self._check_bypass(position, slot, target_slots)
            if grad is not None and not create_graph:
                grad = _plain(grad)
                if type(grad) is not np.ndarray:
                    grad = np.asarray(grad)
                if id(grad) in seen or not grad.flags.writeable or grad.base is not None:
                    grad = grad.copy()
                seen.add(id(grad))
            grads.append(grad)
        if not keep:
            self._graph.clear()
            self._suspicious = []
        return grads

    def batched_vjp(self, target: Any, sources: list, seeds: Any, create_graph: bool) -> Any:
        """VJPs of ``target`` with every cotangent in ``seeds`` (leading axis) in one backward pass.

        Returns one array ``(len(seeds), *source.shape)`` per source, or None for a source
        the target does not reach. Batch-aware rules take the whole batch of cotangents;
        the others run once per cotangent at their node (see :mod:`ember.autodiff.rules.batched`).
        While an outer tape records (``create_graph``) it returns ``NotImplemented``: the
        tape then takes one recorded VJP per seed.
        """
        if create_graph:
            return NotImplemented
        graph = self._graph
        source_slots = [self._source_slot(s) for s in sources]
        if all([slot is None for slot in source_slots]):
            return [None] * len(sources)
        t_slot = graph.slot(target)
        if t_slot is None:
            raise UntrackedTargetError(0, "numpy")
        self._check_views(source_slots, [t_slot])
        seeds = np.asarray(_plain(seeds))
        batch = seeds.shape[0]
        if tuple(seeds.shape[1:]) != tuple(target.shape):
            raise ValueError(
                f"GradientTape: batched cotangents of shape {tuple(seeds.shape)} do not match the target's "
                f"shape {tuple(target.shape)} behind a leading batch axis"
            )
        if not _carries_gradient(target):
            return [None] * len(sources)
        wanted = {s for s in source_slots if s is not None}
        nodes = graph.relevant_nodes(wanted, {t_slot})
        forward = set(wanted)
        for node in nodes:
            forward.update(flat_slots(node.out_slots))
        cots: dict[int, Any] = {}
        _accumulate(cots, t_slot, seeds.astype(target.dtype, copy=False), target, ops, "", batch)
        _walk(nodes, cots, forward, wanted, create_graph=False, batch=batch)
        rows = []
        for position, slot in enumerate(source_slots):
            row = None if slot is None else cots.get(slot)
            if row is None and slot is not None and slot != t_slot:
                self._check_bypass(position, slot, [t_slot])
            rows.append(None if row is None else np.array(_plain(row), copy=True))
        return rows

    def _check_bypass(self, position: int, source_slot: int, target_slots: list) -> None:
        """Raise if an unconnected source's path looks cut by an unrecorded computation.

        The signature of such a cut: a result computed from the source by recorded ops is
        never used again (a dead end), while the target's recorded ops consumed an
        untracked array of the same shape and dtype, e.g. ``f = ops.nn.relu`` bound before
        the tape began and called inside it, or NumPy applied to ``x.view(np.ndarray)``.
        """
        nodes = self._graph.nodes
        reach = {source_slot}
        consumed: set[int] = set()
        reached = []
        for node in nodes:
            inputs = flat_slots(node.in_slots) + flat_slots(list(node.kw_slots.values()))
            consumed.update(inputs)
            if any([s in reach for s in inputs]):
                reach.update(flat_slots(node.out_slots))
                reached.append(node)
        if not reached:
            return  # the source was never used by a recorded op: plainly unconnected
        targets = set(target_slots)
        dead = set()
        for node in reached:
            outs = node.out if type(node.out_slots) is list else [node.out]
            out_slots = flat_slots(node.out_slots) if type(node.out_slots) is list else [node.out_slots]
            for slot, value in zip(out_slots, outs):
                if slot not in consumed and slot not in targets and _carries_gradient(value):
                    dead.add((tuple(value.shape), value.dtype))
        if not dead:
            return
        needed = set(target_slots)
        for node in reversed(nodes):
            if not any([s in needed for s in flat_slots(node.out_slots)]):
                continue
            needed.update(flat_slots(node.in_slots))
            needed.update(flat_slots(list(node.kw_slots.values())))
            for arg, slot in zip(node.args, node.in_slots):
                values = arg if type(arg) in (list, tuple) else [arg]
                slots = slot if type(slot) is list else [slot] * len(values)
                for value, s in zip(values, slots):
                    if s is None and isinstance(value, np.ndarray) and _carries_gradient(value) and \
                            (tuple(value.shape), value.dtype) in dead:
                        raise ValueError(
                            f"GradientTape.gradient: source {position} is used by recorded ops, but none of "
                            f"them reaches the target: a value computed from it (shape {tuple(value.shape)}) is "
                            f"never used again, while ember.ops.{node.op} (node {node.index}) consumed an untracked "
                            "array of that shape. Something between them ran outside the tape: an ember.ops "
                            "function bound before the tape began (`f = ops.nn.relu`; call `ops.nn.relu(x)` "
                            "instead), or NumPy on plain values (`x.view(np.ndarray)`, `np.asarray(x)`). "
                            "Use ember.ops inside the tape, or ember.stop_gradient if no gradient should flow."
                        )

    def _check_views(self, source_slots: list, target_slots: list) -> None:
        if not self._suspicious:
            return
        requested = {s for s in source_slots if s is not None}
        flagged = [(i, p, s) for i, p, s in self._suspicious if s in requested]
        if not flagged:
            return
        needed = set(target_slots)
        ancestors = set()
        for node in reversed(self._graph.nodes):
            if any([s in needed for s in flat_slots(node.out_slots)]):
                ancestors.add(node.index)
                needed.update(flat_slots(node.in_slots))
                needed.update(flat_slots(list(node.kw_slots.values())))
        for index, position, _ in flagged:
            if index in ancestors:
                node = self._graph.nodes[index]
                raise ValueError(
                    f"GradientTape.gradient: argument {position} of ember.ops.{node.op} (node {index}) is a "
                    "plain NumPy view of a watched source (made by NumPy indexing/reshaping on a plain "
                    "array, which the tape cannot see), so the gradient would miss that path; use "
                    "ember.ops (ops.getitem, ops.reshape, ...) or an ember.Tensor on the source instead"
                )


def _walk(nodes: list, cots: dict, forward: set, keep_slots: set, create_graph: bool,
          batch: int | None = None) -> None:
    """Apply the VJP rules of ``nodes`` in reverse, accumulating cotangents into ``cots`` by slot.

    With ``batch`` set, every cotangent carries a leading axis of that size (a batch of
    VJPs in one pass): batch-aware rules (:func:`~ember.autodiff.rules.batched.batched_rule`)
    take it whole, any other rule runs once per cotangent of the batch at that node.
    """
    rules = _rules.RULES
    for node in reversed(nodes):
        out_slots = node.out_slots
        if type(out_slots) is int:
            g = cots.get(out_slots)
            if g is None:
                continue
            if out_slots not in keep_slots:
                del cots[out_slots]
            out = node.out
        else:
            g = [None if s is None else cots.get(s) for s in out_slots]
            if all([c is None for c in g]):
                continue
            for s in out_slots:
                if s is not None and s not in keep_slots:
                    cots.pop(s, None)
            out = node.out
            g = type(out)(g)  # None where an output got no cotangent (vjp.fill_zeros)
        custom = getattr(node.function, "__ember_vjp__", None)
        rule = custom or rules.get(node.op)
        if rule is None:
            raise NotImplementedError(
                f"GradientTape: no gradient rule for ember.ops.{node.op} on the NumPy backend"
            )
        args, kwargs, in_slots = node.args, node.kwargs, node.in_slots
        if node.kw_slots:
            args, kwargs, in_slots = _bind_keywords(node)
        flags: list[bool] = []
        wanted_any = False
        for slot, arg in zip(in_slots, args):
            if slot is None:
                flags.append(False)
                continue
            flag = _needed(slot, arg, forward) if type(slot) is list else (
                slot in forward and getattr(arg, "dtype", None) is not None
                and (arg.dtype.kind in _CARRIES_GRADIENT or arg.dtype.name == "bfloat16"))
            flags.append(flag)
            wanted_any = wanted_any or flag
        if not wanted_any:
            continue
        needed = tuple(flags)
        if not create_graph:
            args = prepare_args(args)
            out = _plain_outputs(out)
        if batch is None:
            result = _call_rule(rule, needed, False, g, out, args, kwargs)
        else:
            whole = None if custom is not None or type(out_slots) is not int else _batched.batched_rule(node.op)
            if whole is not None:
                result = _call_rule(whole, needed, True, g, out, args, kwargs)
            else:
                result = _rule_per_cotangent(rule, needed, batch, g, out, args, kwargs)
        for position, slot in enumerate(in_slots):
            if not needed[position]:
                continue
            cot = result[position] if position < len(result) else None
            if cot is None:
                continue
            arg = args[position]
            if type(slot) is list:
                for s, c, a in zip(slot, cot, arg):
                    if s is not None and c is not None and s in forward and _carries_gradient(a):
                        _accumulate(cots, s, c, a, ops, node.op, batch)
            else:
                _accumulate(cots, slot, cot, arg, ops, node.op, batch)


def _call_rule(rule: Any, needed: tuple, batched: bool, g: Any, out: Any, args: tuple, kwargs: dict) -> Any:
    context = _rules._context  # per thread: another thread's backward pass sets its own
    outer = context.needed, context.batched
    try:  # restored, not reset: a rule that differentiates inside gets its caller's flags back
        context.needed, context.batched = needed, batched
        return rule(g, out, *args, **kwargs)
    finally:
        context.needed, context.batched = outer


def _rule_per_cotangent(rule: Any, needed: tuple, batch: int, g: Any, out: Any, args: tuple,
                        kwargs: dict) -> list:
    """A rule that is not batch-aware, applied to each cotangent of the batch; results stacked."""
    per_row = []
    for i in range(batch):
        g_i = type(g)(None if c is None else c[i] for c in g) if type(g) in (tuple, list) else g[i]
        per_row.append(_call_rule(rule, needed, False, g_i, out, args, kwargs))
    stacked: list = []
    for position, arg in enumerate(args):
        column = [row[position] if position < len(row) else None for row in per_row]
        if isinstance(arg, (list, tuple)) and any([c is not None for c in column]):
            parts = [[None] * len(arg) if c is None else list(c) for c in column]
            stacked.append([_stack_rows([p[k] for p in parts], a) for k, a in enumerate(arg)])
        else:
            stacked.append(_stack_rows(column, arg))
    return stacked


def _stack_rows(rows: list, like: Any) -> Any:
    """One cotangent per batch row stacked on a new leading axis (zeros for a row's None)."""
    if all([r is None for r in rows]):
        return None
    dtype = next(np.asarray(_plain(r)).dtype for r in rows if r is not None)
    return np.stack([np.zeros(_rules.shape_of(like), dtype) if r is None else np.asarray(_plain(r)) for r in rows])


def _same_values(view: np.ndarray, source: Any) -> bool:
    """Whether ``view`` aliases all of ``source`` (a stop_gradient/``.view()`` of it: a constant)."""
    if not isinstance(source, np.ndarray):
        return False
    return (view.shape == source.shape and view.strides == source.strides and view.dtype == source.dtype
            and view.__array_interface__["data"][0] == source.__array_interface__["data"][0])


def _plain_outputs(out: Any) -> Any:
    kind = type(out)
    if kind is TracedArray:
        return _plain(out)
    if kind is tuple or kind is list:
        return kind(_plain(o) for o in out)
    return out


def _needed(slot: Any, arg: Any, forward: set) -> bool:
    if slot is None:
        return False
    if type(slot) is list:
        return any([s is not None and s in forward for s in slot])
    return slot in forward and _carries_gradient(arg)


def _accumulate(cots: dict, slot: int, cot: Any, like: Any, ops: Any, op: str = "",
                batch: int | None = None) -> None:
    dtype = like.dtype
    shape = like.shape if batch is None else (batch,) + tuple(like.shape)
    cot_dtype = getattr(cot, "dtype", None)
    if cot_dtype == dtype and cot.shape == shape:  # the common case
        previous = cots.get(slot)
        cots[slot] = cot if previous is None else ops.add(previous, cot)
        return
    if cot_dtype is None:
        cot = ops.convert_to_tensor(cot)
        cot_dtype = cot.dtype
    if cot_dtype != dtype:
        if cot_dtype.kind == "c" and dtype.kind != "c":
            cot = ops.real(cot)
        cot = ops.cast(cot, dtype)
    if cot.shape != shape:
        raise RuntimeError(
            f"GradientTape: the gradient rule of ember.ops.{op} returned a cotangent of shape {cot.shape} "
            f"where {shape} was expected (an Ember bug; please report it)"
        )
    previous = cots.get(slot)
    cots[slot] = cot if previous is None else ops.add(previous, cot)


def _bind_keywords(node: Any) -> tuple:
    """Move keyword arguments that hold tracked arrays into their positional places."""
    try:
        bound = inspect.signature(node.function).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):
        raise NotImplementedError(
            f"GradientTape: cannot map the keyword arguments of ember.ops.{node.op} to its parameters"
        ) from None
    args = bound.args
    kwargs = bound.kwargs
    slots = list(node.in_slots) + [None] * (len(args) - len(node.in_slots))
    names = list(inspect.signature(node.function).parameters)
    for key, slot in node.kw_slots.items():
        if key in names and names.index(key) < len(args):
            slots[names.index(key)] = slot
        else:
            raise NotImplementedError(
                f"GradientTape: ember.ops.{node.op} received the tracked array {key!r} as a keyword the "
                "gradient rules cannot map; pass it positionally"
            )
    return tuple(args), dict(kwargs), tuple(slots)


# ------------------------------------------------------------------ custom gradients
def call_custom_gradient(forward: Any, backward: Any, args: tuple, kwargs: dict) -> Any:
    """Run a custom-gradient function as one recorded node whose VJP rule is its ``grad_fn``.

    ``forward(*args, **kwargs) -> (outputs, grad_fn)``; ``backward(grad_fn, upstream, n_args)``
    returns one gradient (or None) per positional argument. When an outer tape records
    during the backward pass (higher order), the forward is recomputed from the (traced)
    inputs so the values ``grad_fn`` uses are connected to them on that tape.
    """
    box: list = []

    def custom_gradient(*call_args: Any, **call_kwargs: Any) -> Any:
        outputs, grad_fn = forward(*call_args, **call_kwargs)
        box[:] = [grad_fn]
        return outputs

    def rule(upstream: Any, out: Any, *rule_args: Any, **rule_kwargs: Any) -> tuple:
        grad_fn = box[0]
        if recording.is_recording():
            grad_fn = forward(*rule_args, **rule_kwargs)[1]
        if type(upstream) in (tuple, list):
            upstream = tuple(np.zeros_like(_plain(o)) if g is None else g for g, o in zip(upstream, out))
        return backward(grad_fn, upstream, len(rule_args))

    custom_gradient.__ember_vjp__ = rule  # type: ignore[attr-defined]  # the rule, read off the recorded function
    return recording.run_recorded("custom_gradient", custom_gradient, args, kwargs)


__all__ = ["TapeEngine", "call_custom_gradient", "prepare_args", "wrap_output"]

register_own_engine("numpy", sys.modules[__name__])
