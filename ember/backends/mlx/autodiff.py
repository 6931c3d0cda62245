"""The MLX tape engine: ``ember.GradientTape`` through MLX's own transforms.

MLX arrays carry no tape, so while a tape records, the ops run on tracked arrays
are recorded (:mod:`ember.autodiff.recording` offers every op call, through the
recorder of :mod:`ember.recorded.calls`, to this engine, which keeps it in a
:class:`~ember.recorded.graph.RecordedGraph`: both live below the backends, so this
package imports nothing of ``ember.autodiff``). ``gradient`` turns the part of that
record between the sources and the targets into a *pure function of the sources*:
it replays the recorded ops in order with the backend's raw functions, substituting
the sources by position and keeping every other input as a constant, and hands it to
``mx.vjp`` with the output gradients as cotangents. MLX computes the gradient; Ember
only says what was computed.

Recorded calls:

* every differentiable ``ember.ops`` function (and ``ember.Tensor`` operators);
* ``mx.array``'s Python operators (``x * w + b``, ``x[1:]``, ``-x``, ``x @ w``, in-place
  ``x += y`` as the out-of-place op) and its common methods (``x.sum()``,
  ``x.reshape(...)``, ``x.T``, ``x.astype(...)``, ...): while any MLX tape records,
  :func:`on_recording` patches them to call the current ``ember.ops`` function, and
  restores MLX's originals when the last tape stops (:mod:`ember.backends.mlx._operators`).
  Comparisons stay native (they have no gradient). Inside a recorded op, or during a replay, the patches call MLX's
  originals directly. Within a tape these operators follow Ember's dtype promotion
  rules (the same on every backend) instead of MLX's.

Not recorded: direct ``mlx.core`` function calls (``mx.exp(x)``), ``mlx.nn`` code and
in-place ``x[i] = v``. Their results are constants for the tape.

Higher order: when another tape records while this one computes a gradient (nested
tapes), the gradient computation is recorded on the outer tape(s) as ONE composite
node (``"gradient"``) whose function redoes the replay and ``mx.vjp`` from its array
arguments: the sources, the output gradients and every outside input of the replayed
ops (any of which the outer tape may track). The outer replay substitutes them and
MLX differentiates through the inner ``mx.vjp`` (nested transforms).

Rules that keep a gradient from being silently wrong:

* A source the tape never tracked (not watched, not produced by a recorded op) gets
  None (zeros with ``unconnected_gradients="zero"``), as in TensorFlow.
* A target the tape never tracked (not produced by a recorded op, not a watched source)
  while some source is tracked raises ``ValueError``: it was computed by code the tape
  cannot see (e.g. ``mx.exp`` called directly), so "no gradient" might be wrong. Compute
  it with ``ember.ops`` / ``ember.Tensor`` operations (or ``mx.array`` operators) inside
  the tape, or wrap the constant in ``ember.stop_gradient`` explicitly.
* A source that a tracked target does not reach through the record gets None/zeros. If
  the target's recorded ops consumed an array made by an unrecorded ``mx.*`` call from
  that source, the dependency is invisible: this is the one case the tape cannot
  detect (MLX exposes no graph to inspect), hence the rule to use ``ember.ops`` inside.
* An op MLX has no gradient for raises ``NotImplementedError`` naming the Ember op. The
  factorisations MLX 0.32 cannot differentiate (``linalg.inv``, ``solve``, ``cholesky``,
  ``eigh``, ``eigvalsh``, ``qr``, ``svd``) carry the NumPy backend's rules as
  ``mx.custom_function`` VJPs (:mod:`ember.backends.mlx._linalg_vjp`), first order;
  ``qr(mode="complete")`` with more rows than columns still raises, as on NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np

from ember.backends._common import UntrackedTargetError
from ember.backends.mlx import _operators
from ember.recorded import calls
from ember.recorded.graph import RecordedGraph, flat_slots

_ARRAY = mx.array
_NON_FLOAT_KINDS = ("bool", "int", "uint")


def _is_float_dtype(dtype: Any) -> bool:
    text = str(dtype).rsplit(".", 1)[-1]
    return not text.startswith(_NON_FLOAT_KINDS)


# ============================================================================ the engine


class TapeEngine:
    """One per ``GradientTape`` on the MLX backend (see the module docstring)."""

    records_ops = True  # the tape offers it every op call while it records (ember.autodiff.recording)

    def __init__(self, persistent: bool):
        self.persistent = bool(persistent)
        self._graph = RecordedGraph()
        self._paused = 0
        self._program_cache: tuple | None = None

    @property
    def graph(self) -> list:
        return self._graph.nodes

    # --- recording state -------------------------------------------------------------
    def pause(self) -> None:
        self._paused += 1

    def resume(self) -> None:
        if self._paused:
            self._paused -= 1

    def watch(self, native: Any) -> None:
        if type(native) is not _ARRAY:
            raise TypeError(
                f"GradientTape.watch (mlx backend): expected an mlx.core.array, received {type(native).__name__}"
            )
        graph = self._graph
        key = id(native)
        if key in graph.source_slots:
            return
        slot = graph.slot(native)
        if slot is None:
            graph.watch(native)
        else:  # already an op's output on this tape: keep its place in the record (as TensorFlow)
            graph.source_slots[key] = slot
            graph.watched.append(native)

    def tracks(self, native: Any) -> bool:
        """True if ``native`` is a watched source or an output of an op this tape recorded."""
        return id(native) in self._graph.source_slots or self._graph.is_tracked(native)

    def record(self, name: str, function: Callable, args: tuple, kwargs: dict, out: Any) -> bool:
        if self._paused:
            return False
        self._program_cache = None
        return self._graph.record(name, function, args, kwargs, out)

    # --- gradients -----------------------------------------------------------------------
    def _source_slot(self, source: Any) -> int | None:
        graph = self._graph
        slot = graph.source_slots.get(id(source))
        if slot is not None:
            return slot
        return graph.slot(source)

    def gradient(
        self,
        targets: list,
        sources: list,
        output_gradients: list | None,
        keep: bool,
        create_graph: bool,
    ) -> list:
        graph = self._graph
        grads: list = [None] * len(sources)
        source_slots = [self._source_slot(s) if type(s) is _ARRAY else None for s in sources]
        if all([slot is None for slot in source_slots]):
            return grads
        target_slots = []
        for i, target in enumerate(targets):
            slot = graph.slot(target) if type(target) is _ARRAY else None
            if slot is None:
                raise UntrackedTargetError(i, "mlx")
            target_slots.append(slot)
        cotangents = self._cotangents(targets, output_gradients)

        key = (tuple(target_slots), tuple(source_slots), len(graph.nodes))
        if self._program_cache is not None and self._program_cache[0] == key:
            program = self._program_cache[1]
        else:
            program = _Program.build(graph, source_slots, target_slots, targets)
            self._program_cache = (key, program)
        if not program.connected:
            return grads
        primals = [
            mx.zeros_like(sources[k]) if i in program.perturbed else sources[k]
            for i, k in enumerate(program.connected)
        ]
        externals = program.externals

        outers = [e for e in calls.recording_engines() if e is not self] if create_graph else []
        with calls.unrecorded():
            found = program.vjp(primals, cotangents, externals)
        if outers:
            n_p, n_c = len(primals), len(cotangents)

            def gradient_composite(*arrays: Any) -> tuple:
                return tuple(program.vjp(list(arrays[:n_p]), list(arrays[n_p:n_p + n_c]), list(arrays[n_p + n_c:])))

            gradient_composite.inner_ops = [step[-1] for step in program.steps]  # type: ignore[attr-defined]  # marker

            args = tuple(primals) + tuple(cotangents) + tuple(externals)
            out = tuple(found)
            for engine in outers:
                engine.record("gradient", gradient_composite, args, {}, out)
            found = list(out)
        for k, g in zip(program.connected, found):
            grads[k] = g
        for k, first in program.aliases.items():
            grads[k] = grads[first]
        if not keep:
            self._program_cache = None
        return grads

    def batched_vjp(self, target: Any, sources: list, seeds: Any, create_graph: bool) -> Any:
        """VJPs of ``target`` with every cotangent in ``seeds`` (leading axis): ``mx.vmap`` of the replayed ``mx.vjp``.

        While an outer tape records (``create_graph``) it returns ``NotImplemented``: the
        tape then takes one VJP per seed, each recorded for the outer tape.
        """
        if create_graph:
            return NotImplemented
        graph = self._graph
        rows: list = [None] * len(sources)
        source_slots = [self._source_slot(s) if type(s) is _ARRAY else None for s in sources]
        if all(slot is None for slot in source_slots):
            return rows
        slot = graph.slot(target) if type(target) is _ARRAY else None
        if slot is None:
            raise UntrackedTargetError(0, "mlx")
        program = _Program.build(graph, source_slots, [slot], [target])
        if not program.connected:
            return rows
        primals = [
            mx.zeros_like(sources[k]) if i in program.perturbed else sources[k]
            for i, k in enumerate(program.connected)
        ]
        if type(seeds) is not _ARRAY:
            seeds = mx.array(np.asarray(seeds))
        if seeds.dtype != target.dtype:
            seeds = seeds.astype(target.dtype)
        externals = program.externals

        def one(cotangent: Any) -> tuple:
            return tuple(program.vjp(primals, [cotangent], externals))

        try:
            with calls.unrecorded():
                found = mx.vmap(one)(seeds)
        except Exception:  # an op without a vmap rule: one VJP per seed instead
            return NotImplemented
        for k, g in zip(program.connected, found):
            rows[k] = g
        for k, first in program.aliases.items():
            rows[k] = rows[first]
        return rows

    @staticmethod
    def _cotangents(targets: list, output_gradients: list | None) -> list:
        cotangents = []
        for i, target in enumerate(targets):
            seed = None if output_gradients is None else output_gradients[i]
            if seed is None:
                seed = mx.ones_like(target)
            else:
                if type(seed) is not _ARRAY:
                    seed = mx.array(np.asarray(seed) if not isinstance(seed, (int, float, complex)) else seed)
                if seed.dtype != target.dtype:
                    seed = seed.astype(target.dtype)
                if tuple(seed.shape) != tuple(target.shape):
                    raise ValueError(
                        f"GradientTape.gradient: output_gradients[{i}] has shape {tuple(seed.shape)} but its "
                        f"target has shape {tuple(target.shape)}"
                    )
            cotangents.append(seed)
        return cotangents

    def connected(self, target: Any, source: Any) -> bool:
        if type(target) is not _ARRAY or type(source) is not _ARRAY:
            return False
        target_slot, source_slot = self._graph.slot(target), self._source_slot(source)
        if target_slot is None or source_slot is None:
            return False
        if target_slot == source_slot:
            return True
        return bool(self._graph.relevant_nodes({source_slot}, {target_slot}))

    # --- lifetime ------------------------------------------------------------------------
    def release(self) -> None:
        self._graph.clear()
        self._program_cache = None

    def reset(self) -> None:
        self._graph.clear()
        self._program_cache = None


# ==================================================================== replay program


class _Program:
    """The recorded ops between some sources and targets, as a replayable pure function.

    Every argument of a replayed op is described by a *spec*:
    ``("src", k)`` the k-th connected source; ``("env", slot)`` the output of an
    earlier replayed op; ``("ext", k)`` the k-th outside array (a constant for this
    tape, maybe tracked by an outer one); ``("seq", type, [specs])`` a list/tuple
    argument; ``("const", value)`` anything else.
    """

    __slots__ = ("steps", "targets", "externals", "connected", "aliases", "stop", "perturbed")

    def __init__(self) -> None:
        self.steps: list[tuple] = []
        self.targets: list[tuple] = []
        self.externals: list[Any] = []
        self.connected: list[int] = []  # indices into the sources list, one per distinct slot
        self.aliases: dict[int, int] = {}  # a repeated source -> the index it repeats
        self.stop: set[int] = set()  # integer/bool outputs: no gradient flows through them
        # sources that a replayed op produces (an intermediate value given as a source):
        # index into ``connected`` -> slot. The replay adds a zero primal to that op's
        # output instead of replacing it, so gradients still flow to earlier sources.
        self.perturbed: dict[int, int] = {}

    @classmethod
    def build(cls, graph: RecordedGraph, source_slots: list, target_slots: list, targets: list) -> _Program:
        program = cls()
        wanted = {s for s in source_slots if s is not None}
        nodes = graph.relevant_nodes(wanted, set(target_slots))
        consumed: set[int] = set(target_slots)
        for node in nodes:
            consumed.update(flat_slots(node.in_slots))
            consumed.update(flat_slots(list(node.kw_slots.values())))
        src_index: dict[int, int] = {}
        first: dict[int, int] = {}
        for k, slot in enumerate(source_slots):
            if slot is None or slot not in consumed:
                continue
            if slot in src_index:  # the same array given twice: the same gradient
                program.aliases[k] = first[slot]
                continue
            src_index[slot] = len(program.connected)
            first[slot] = k
            program.connected.append(k)
        if not program.connected:
            return program
        made_here = {s for node in nodes for s in flat_slots(node.out_slots)}
        for slot, index in src_index.items():
            if slot in made_here:
                program.perturbed[index] = slot
        ext_index: dict[int, int] = {}
        produced: set[int] = set()
        stop = program.stop

        def spec(value: Any, slots: Any) -> tuple:
            if type(value) in (list, tuple):
                inner = slots if isinstance(slots, list) else [None] * len(value)
                return ("seq", type(value), [spec(v, s) for v, s in zip(value, inner)])
            if isinstance(slots, int):
                if slots in produced:
                    return ("env", slots)
                if slots in src_index:
                    return ("src", src_index[slots])
            if type(value) is _ARRAY:
                k = ext_index.get(id(value))
                if k is None:
                    k = ext_index[id(value)] = len(program.externals)
                    program.externals.append(value)
                return ("ext", k)
            return ("const", value)

        for node in nodes:
            arg_specs = [spec(a, s) for a, s in zip(node.args, node.in_slots)]
            kw_specs = {key: spec(v, node.kw_slots.get(key)) for key, v in node.kwargs.items()}
            outs = node.out if isinstance(node.out_slots, list) else [node.out]
            out_slots = node.out_slots if isinstance(node.out_slots, list) else [node.out_slots]
            for o, s in zip(outs, out_slots):
                if s is not None and type(o) is _ARRAY and not _is_float_dtype(o.dtype):
                    stop.add(s)
            program.steps.append((node.function, arg_specs, kw_specs, node.out_slots, node.op))
            produced.update(s for s in out_slots if s is not None)
        for slot, target in zip(target_slots, targets):
            if slot in produced:
                program.targets.append(("env", slot))
            elif slot in src_index:
                program.targets.append(("src", src_index[slot]))
            else:  # tracked, but no connected source reaches it: a constant
                program.targets.append(("const", target))
        return program

    def run(self, primals: list, externals: list) -> list:
        env: dict[int, Any] = {}
        value = _spec_reader(env, primals, externals)
        stop = self.stop
        perturb = {slot: index for index, slot in self.perturbed.items()}

        def store(slot: int, out: Any) -> None:
            if slot in stop:
                out = mx.stop_gradient(out)
            elif slot in perturb:
                out = mx.add(out, primals[perturb[slot]])
            env[slot] = out

        for function, arg_specs, kw_specs, out_slots, _name in self.steps:
            out = function(*[value(s) for s in arg_specs], **{k: value(s) for k, s in kw_specs.items()})
            if isinstance(out_slots, list):
                for slot, o in zip(out_slots, out):
                    if slot is not None:
                        store(slot, o)
            else:
                store(out_slots, out)
        return [value(t) for t in self.targets]

    def vjp(self, primals: list, cotangents: list, externals: list) -> list:
        def pure(*args: Any) -> list:
            return self.run(list(args), externals)

        try:
            _, grads = mx.vjp(pure, list(primals), list(cotangents))
        except NotImplementedError:
            raise  # a nested tape's replay already named the op
        except Exception as error:
            culprit = self._culprit(externals, primals)
            if culprit is None:
                raise
            raise NotImplementedError(
                f"GradientTape (mlx backend): MLX cannot differentiate {culprit} "
                f"(MLX says: {error}). Compute this op outside the differentiated path, or use "
                "the torch or numpy backend for this gradient"
            ) from error
        return [g if g.dtype == p.dtype else g.astype(p.dtype) for g, p in zip(grads, primals)]

    def _culprit(self, externals: list, primals: list) -> str | None:
        """The first replayed op MLX has no gradient for, in words (only on the error path)."""
        env: dict[int, Any] = {}
        value = _spec_reader(env, primals, externals)
        for function, arg_specs, kw_specs, out_slots, name in self.steps:
            args = [value(s) for s in arg_specs]
            kwargs = {k: value(s) for k, s in kw_specs.items()}
            positions = [i for i, a in enumerate(args) if type(a) is _ARRAY and _is_float_dtype(a.dtype)]
            out = function(*args, **kwargs)
            if positions:
                def single(*xs: Any, _args: list = args, _pos: list = positions, _f: Callable = function,
                           _kwargs: dict = kwargs) -> list:
                    call = list(_args)
                    for p, x in zip(_pos, xs):
                        call[p] = x
                    result = _f(*call, **_kwargs)
                    items = result if isinstance(result, (list, tuple)) else [result]
                    return [r for r in items if type(r) is _ARRAY and _is_float_dtype(r.dtype)]

                try:
                    outs = single(*[args[p] for p in positions])
                    mx.vjp(single, [args[p] for p in positions], [mx.ones_like(o) for o in outs])
                except Exception:
                    inner = getattr(function, "inner_ops", None)
                    if inner is not None:
                        return "the derivative of a nested tape's gradient (of ember.ops " + ", ".join(inner) + ")"
                    return f"ember.ops.{name}"
            if isinstance(out_slots, list):
                for slot, o in zip(out_slots, out):
                    if slot is not None:
                        env[slot] = o
            else:
                env[out_slots] = out
        return None


def _spec_reader(env: dict, primals: list, externals: list) -> Callable[[tuple], Any]:
    """How a replay reads an argument's spec: ``("env", slot)`` a value the replay computed, ``("src", i)``
    the ``i``-th primal, ``("ext", i)`` the ``i``-th external, ``("seq", type, specs)`` a sequence of
    specs, any other ``(kind, constant)`` the constant."""

    def value(spec: tuple) -> Any:
        kind = spec[0]
        if kind == "env":
            return env[spec[1]]
        if kind == "src":
            return primals[spec[1]]
        if kind == "ext":
            return externals[spec[1]]
        if kind == "seq":
            return spec[1](value(s) for s in spec[2])
        return spec[1]

    return value


# ============================================================ recording hook


def on_recording(active: bool) -> None:
    """Recording hook: ``mx.array``'s operators are recorded while any MLX tape records."""
    if active:
        _operators.patch()
    else:
        _operators.unpatch()


def is_patched() -> bool:
    """True while ``mx.array``'s operators are re-bound to recorded ``ember.ops`` calls."""
    return _operators.is_patched()


def value_and_grad_leaves(fn: Any, leaves: list) -> tuple:
    """``(fn(leaves), grads)`` with one ``mx.value_and_grad`` call: a single forward pass.

    ``ember.value_and_grad`` uses this when no tape is recording (a recording tape must
    see the computation for higher-order derivatives, so it goes through the tape then).
    ``fn`` takes the list of leaves and returns a scalar array; anything else it wants
    to hand back (aux outputs) it keeps in its own closure.
    """

    def of_leaves(*xs: Any) -> Any:
        return fn(list(xs))

    if not leaves:
        return of_leaves(), []
    value, grads = mx.value_and_grad(of_leaves, argnums=list(range(len(leaves))))(*leaves)
    # MLX returns a bare array (not a 1-tuple) when one argument is differentiated.
    return value, [grads] if len(leaves) == 1 else list(grads)


# ============================================================ custom gradients


def call_custom_gradient(forward: Callable, backward: Callable, args: tuple, kwargs: dict) -> Any:
    """Run a custom-gradient function as one ``mx.custom_function`` (one recorded op for a tape).

    ``forward(*args, **kwargs) -> (outputs, grad_fn)``; ``backward(grad_fn, upstream, n_args)``
    returns one gradient (or None) per positional argument. The VJP recomputes the forward
    from the primals it is given, so it is correct under ``mx.compile`` and nested transforms
    (MLX differentiates the VJP itself for higher order).
    """
    # One recorded op (the MLX engine has no prepare_args/wrap_output hooks).
    return calls.recorder("custom_gradient", _custom_call(forward, backward), None, None)(*args, **kwargs)


def _custom_call(forward: Callable, backward: Callable) -> Callable:
    def custom_gradient(*args: Any, **kwargs: Any) -> Any:
        positions = [i for i, a in enumerate(args) if type(a) is _ARRAY]

        def rebuild(arrays: Any) -> list:
            call = list(args)
            for p, x in zip(positions, arrays):
                call[p] = x
            return call

        @mx.custom_function
        def function(*arrays: Any) -> Any:
            return forward(*rebuild(arrays), **kwargs)[0]

        @function.vjp
        def function_vjp(primals: Any, cotangents: Any, _outputs: Any) -> tuple:
            primals = primals if isinstance(primals, (tuple, list)) else (primals,)
            _, grad_fn = forward(*rebuild(primals), **kwargs)
            upstream = tuple(cotangents) if isinstance(cotangents, (tuple, list)) else cotangents
            grads = backward(grad_fn, upstream, len(args))
            out = []
            for p, primal in zip(positions, primals):
                g = grads[p]
                if g is None:
                    g = mx.zeros_like(primal)
                elif type(g) is not _ARRAY:
                    g = mx.array(g)
                if g.dtype != primal.dtype:
                    g = g.astype(primal.dtype)
                out.append(g)
            return tuple(out)

        return function(*[args[p] for p in positions])

    return custom_gradient
