"""``ember.GradientTape``: TensorFlow's tape API on every backend.

The tape is a thin, backend-agnostic front over one *engine* per backend:

* torch: native autograd (watching sets ``requires_grad``);
* MLX: ops run inside the tape are recorded and, on ``gradient``, replayed as a pure
  function of the sources for ``mx.vjp`` to differentiate;
* NumPy: the same recording, walked backwards with Ember's VJP rules.

An engine either records the op calls :mod:`ember.autodiff.recording` offers it
(``records_ops = True``: NumPy, MLX; the tape starts and stops that recording) or
records on its own between ``begin()`` and ``end()`` (torch). On NumPy and MLX the tape
sees every ``ember.ops`` call and every ``ember.Tensor`` operator. MLX's own array
operators (``x * w``) are recorded too while a tape is recording. NumPy's operators on
arrays a recorded op returned are recorded as well (those arrays are a traced ndarray
subclass); an operator applied to two plain NumPy arrays is invisible to any tape, and
when that leaves a watched source cut off from the target the tape raises instead of
returning a wrong gradient.

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> x = ops.convert_to_tensor([1.0, 2.0, 3.0])
    >>> with ember.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = ops.sum(ops.multiply(x, x))
    >>> ops.to_numpy(tape.gradient(y, x)).tolist()
    [2.0, 4.0, 6.0]
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import optree

from ember import backends, dtypes, ops
from ember.autodiff import recording
from ember.autodiff.engines import engine_module
from ember.autodiff.op_graph import GraphRecorder


class _ThreadTapes(threading.local):
    """Per thread: weak references to the tapes inside their ``with`` block in this thread (weak:
    a tape whose exit an interrupt cut short must not stay listed once the program drops it).
    A variable read in one thread is seen by that thread's tapes only."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref] = []


_tapes = _ThreadTapes()
_CLEANUP_TRIES = 8  # attempts to finish a tape's cleanup through repeated interrupts


def _is_tensor(value: Any) -> bool:
    return getattr(type(value), "__ember_tensor__", False)


def _native(value: Any) -> Any:
    return value._native if _is_tensor(value) else value


_OWN_VIEWS: dict[int, weakref.ref] = {}  # views watch() gave a Tensor (ndarrays are unhashable)


def _is_own_view(native: Any) -> bool:
    ref = _OWN_VIEWS.get(id(native))
    return ref is not None and ref() is native


def _forget_own_view(key: int, _dead_ref: weakref.ref) -> None:
    _OWN_VIEWS.pop(key, None)


def _set_native(tensor: Any, native: Any) -> None:
    object.__setattr__(tensor, "_native", native)  # Tensors are frozen; the tape re-points one at a view


def _repointable(tensor: Any) -> bool:
    """Whether ``tensor`` holds its array itself (an ``ember.Tensor``), not reads it from elsewhere (an
    ``ember.Variable`` reads its owner's state: the tape watches that array, which the forward reads)."""
    return not isinstance(getattr(type(tensor), "_native", None), property)


def is_variable(value: Any) -> bool:
    """Whether ``value`` follows Ember's variable protocol (see :func:`record_variable_read`)."""
    return getattr(type(value), "__ember_variable__", False)


def record_variable_read(variable: Any, value: Any) -> Any:
    """Hook for variable objects: call it with the native array each time a variable is read.

    The protocol a variable class (``ember.Variable``) follows to take part in tapes:

    * its class sets ``__ember_variable__ = True``;
    * it has ``value`` (the current native array) and ``trainable`` (bool) attributes;
    * every read of its value by user code goes through
      ``value = ember.autodiff.record_variable_read(self, value)``.

    Every tape recording in the calling thread then watches ``value`` if the tape was created with
    ``watch_accessed_variables=True`` and the variable is trainable, or if the variable
    itself was given to ``tape.watch`` (TensorFlow's rules); ``tape.gradient(loss,
    variables)`` maps each variable to the value read inside the tape. Outside any tape
    this costs one list check.

    Returns:
        ``value`` (so a getter can ``return record_variable_read(self, value)``).
    """
    refs = _tapes.refs
    if refs:
        for ref in refs:
            tape = ref()
            if tape is not None:
                tape._on_variable_read(variable, value)
    return value


def active_tapes() -> bool:
    """Whether a tape records in this thread (a variable checks it before building its read hook's arguments)."""
    return bool(_tapes.refs)


def _result_type(leaf: Any) -> type:
    """The type a gradient takes for source ``leaf``: a Tensor subclass may name another with
    ``__gradient_type__`` (``ember.Variable``'s gradients are plain ``ember.Tensor``s)."""
    return getattr(type(leaf), "__gradient_type__", type(leaf))


def _leaves(tree: Any) -> tuple[list, Any]:
    leaves, spec = optree.tree_flatten(tree, none_is_leaf=False)
    return leaves, spec


class GradientTape:
    """Records operations so gradients of a target with respect to sources can be taken.

    Args:
        persistent: allow more than one ``gradient``/``jacobian`` call.
        watch_accessed_variables: TensorFlow's meaning. True (default): every trainable
            variable read inside the tape (an object following the protocol of
            :func:`record_variable_read`, e.g. ``ember.Variable``) is watched, and on torch
            a tensor that requires grad (a ``Parameter``) is differentiated as torch
            would. False: only what :meth:`watch` was given, and values computed from
            it, get gradients, on every backend (torch included).
        record_graph: record the ops run under the tape as an
            :class:`~ember.autodiff.op_graph.OpGraph` (:attr:`graph`) on every backend:
            op names, shapes, dtypes, devices, order, times, producer -> consumer edges
            and the watched sources. It survives ``gradient`` (until :meth:`reset`).
            Off by default: then nothing is recorded for it.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> x = ops.convert_to_tensor(3.0)
        >>> with ember.GradientTape() as outer:
        ...     outer.watch(x)
        ...     with ember.GradientTape() as inner:
        ...         inner.watch(x)
        ...         y = ops.multiply(ops.multiply(x, x), x)
        ...     dy = inner.gradient(y, x)
        >>> float(outer.gradient(dy, x))  # d2(x^3)/dx2 = 6x
        18.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True,
                 record_graph: bool = False):
        for name, flag in (("persistent", persistent), ("watch_accessed_variables", watch_accessed_variables),
                           ("record_graph", record_graph)):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"GradientTape: {name} must be True or False, received {flag!r}")
        self._recorder = GraphRecorder() if record_graph else None
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._backend_name: str | None = None
        self._engine: Any = None
        self._recording = False
        self._used = False
        self._watched: list[Any] = []
        self._variable_ids: set[int] = set()  # variables given to watch()
        self._variable_values: dict[int, Any] = {}  # id(variable) -> native value read inside the tape
        self._stopped = 0

    # --- context -----------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise RuntimeError("GradientTape: this tape is already recording (nested `with` on the same tape)")
        self._ensure_engine()
        self._engine.watch_accessed_variables = self._watch_accessed_variables
        try:
            if self._engine.records_ops:  # NumPy, MLX: the engine's graph is the op calls offered to it
                recording.start(self._engine)
            else:  # torch: the framework's own autograd records
                self._engine.begin()
            if self._recorder is not None:
                recording.start(self._recorder)
            self._recording = True
            _tapes.refs.append(weakref.ref(self))
            return self
        except BaseException:  # an interrupt here: __exit__ will not run, so stop the engine now
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: Any) -> None:
        self._recording = False
        # Finish the cleanup even when a KeyboardInterrupt lands in it (each try is idempotent),
        # then raise that interrupt: a half-stopped engine would record every later op forever.
        interrupted = None
        for _ in range(_CLEANUP_TRIES):
            try:
                _tapes.refs[:] = [ref for ref in _tapes.refs if ref() is not self and ref() is not None]
                if self._recorder is not None:
                    recording.stop(self._recorder)
                if self._engine.records_ops:
                    recording.stop(self._engine)
                else:
                    self._engine.end()
                break
            except BaseException as error:  # noqa: BLE001 - re-raised below
                interrupted = error if interrupted is None else interrupted
        if interrupted is not None:
            raise interrupted

    def _ensure_engine(self) -> None:
        backend = backends.current()
        if self._engine is None:
            self._backend_name = backend.name
            self._engine = engine_module(backend.name).TapeEngine(self._persistent)
            self._engine.owner = weakref.ref(self)  # lets recording drop it if this tape dies mid-with
        elif backend.name != self._backend_name:
            raise RuntimeError(
                f"GradientTape: this tape records on the {self._backend_name!r} backend but the active "
                f"backend is {backend.name!r}; use a new tape after switching backends"
            )

    # --- watching ----------------------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Track ``tensor`` (an array, an ``ember.Tensor`` or a pytree of them) as a source."""
        self._ensure_engine()
        leaves, _ = _leaves(tensor)
        for leaf in leaves:
            if is_variable(leaf):
                self._variable_ids.add(id(leaf))
                self._watch_variable_value(leaf, leaf.value)
                continue
            native = _native(leaf)
            if _is_tensor(leaf) and type(native) is np.ndarray and not _is_own_view(native) and _repointable(leaf):
                # NumPy hands several Tensors of one array the same ndarray; the engine tells
                # sources apart by object, so this Tensor gets its own view (same memory), once.
                native = native.view()
                _OWN_VIEWS[id(native)] = weakref.ref(native, functools.partial(_forget_own_view, id(native)))
                _set_native(leaf, native)
            if not hasattr(native, "shape"):
                raise TypeError(
                    f"GradientTape.watch: expected arrays or ember.Tensors, received {type(leaf).__name__}"
                )
            self._watch_native(native)
            self._watched.append(leaf)

    def _another_tape_records(self) -> bool:
        """Whether another live tape is recording (then gradients are recorded too: create_graph)."""
        tapes = [ref() for ref in _tapes.refs]
        return any([tape is not self and tape is not None and tape._recording for tape in tapes])

    def _pause_all(self) -> None:
        self._engine.pause()
        if self._recorder is not None:
            self._recorder.pause()

    def _resume_all(self) -> None:
        if self._recorder is not None:
            self._recorder.resume()
        self._engine.resume()

    def _watch_native(self, native: Any) -> None:
        self._engine.watch(native)
        if self._recorder is not None:
            self._recorder.watch(native)

    def watched_variables(self) -> tuple:
        """What was watched so far (arrays, Tensors and variables), in the order they were watched."""
        return tuple(self._watched)

    def _on_variable_read(self, variable: Any, value: Any) -> None:
        if not self._recording or self._stopped:
            return
        if id(variable) in self._variable_ids or (
                self._watch_accessed_variables and getattr(variable, "trainable", True)):
            self._watch_variable_value(variable, value)

    def _watch_variable_value(self, variable: Any, value: Any) -> None:
        native = _native(value)
        if self._variable_values.get(id(variable)) is native:
            return
        self._watch_native(native)
        if id(variable) not in self._variable_values:
            self._watched.append(variable)
        self._variable_values[id(variable)] = native

    def _source_native(self, leaf: Any) -> Any:
        if is_variable(leaf):
            native = self._variable_values.get(id(leaf))
            return _native(leaf.value) if native is None else native
        return _native(leaf)

    @property
    def graph(self) -> Any:
        """The recorded graph.

        With ``record_graph=True``: the :class:`~ember.autodiff.op_graph.OpGraph`, the same
        structure on every backend. Without it: the engine's internal record (a list of
        nodes on NumPy and MLX, cleared by a non-persistent ``gradient``; empty on torch).
        """
        if self._recorder is not None:
            return self._recorder.graph
        return [] if self._engine is None else list(self._engine.graph)

    def attribution(self, target: Any, sources: Any = None) -> Any:
        """Gradient-times-input attribution: ``gradient(target, s) * s`` for each source.

        Args:
            target: as for :meth:`gradient` (a non-scalar target is summed).
            sources: an array/Tensor or pytree of them; default: every watched value, in
                watch order (a list).

        Returns:
            The attributions with the structure of ``sources`` (zeros for a source the
            target does not depend on). Uses one :meth:`gradient` call (so a
            non-persistent tape is spent).
        """
        if sources is None:
            sources = list(self._watched)
        grads = self.gradient(target, sources, unconnected_gradients="zero")
        source_leaves, spec = _leaves(sources)
        grad_leaves, _ = _leaves(grads)
        products = []
        for leaf, grad in zip(source_leaves, grad_leaves):
            value = self._source_native(leaf)
            product = ops.multiply(_native(grad), value)
            products.append(_result_type(leaf)(product) if _is_tensor(leaf) else product)
        return optree.tree_unflatten(spec, products)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Temporarily stop recording inside the ``with`` block of this tape."""
        if not self._recording:
            raise RuntimeError("GradientTape.stop_recording: the tape is not recording")
        self._engine.pause()
        if self._recorder is not None:
            self._recorder.pause()
        self._stopped += 1
        try:
            yield
        finally:
            self._stopped -= 1
            if self._recorder is not None:
                self._recorder.resume()
            self._engine.resume()

    def reset(self) -> None:
        """Forget everything recorded and watched; recording continues if it was on."""
        if self._engine is not None:
            self._engine.reset()
        if self._recorder is not None:
            self._recorder.reset()
        self._watched = []
        self._variable_ids = set()
        self._variable_values = {}
        self._used = False

    # --- gradients -----------------------------------------------------------------------
    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: str = "none",
    ) -> Any:
        """Gradient of ``target`` with respect to ``sources``.

        As in TensorFlow, a non-scalar target is summed: the result is the gradient of
        the sum of every element of every leaf of ``target`` (weighted by
        ``output_gradients`` when given), the same on every backend.

        Args:
            target: an array/Tensor or a pytree of them, computed inside this tape's
                ``with`` block (a value computed before the tape began or after it ended
                raises ``ValueError`` on every backend, see ``UntrackedTargetError``).
            sources: an array/Tensor or a pytree of them; the result has this structure.
            output_gradients: cotangents for ``target`` (same structure), default ones.
            unconnected_gradients: ``"none"`` gives None for a source the target does
                not depend on; ``"zero"`` gives zeros.

        Raises:
            RuntimeError: a second call on a non-persistent tape.
            TypeError: an integer or boolean source.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(
                "GradientTape.gradient: unconnected_gradients must be 'none' or 'zero', "
                f"received {unconnected_gradients!r}"
            )
        if self._engine is None:
            raise RuntimeError("GradientTape.gradient: nothing was recorded; use the tape in a `with` block first")
        if self._used and not self._persistent:
            raise RuntimeError(
                "GradientTape.gradient: a non-persistent tape can compute gradients only once; "
                "create it with GradientTape(persistent=True) to call gradient/jacobian repeatedly"
            )
        grads = self._gradient(target, sources, output_gradients, unconnected_gradients, keep=self._persistent)
        if not self._persistent:
            self._used = True
            self._engine.release()
        return grads

    def _gradient(self, target: Any, sources: Any, output_gradients: Any, unconnected: str, keep: bool) -> Any:
        target_leaves, target_spec = _leaves(target)
        source_leaves, source_spec = _leaves(sources)
        if not target_leaves:
            raise ValueError("GradientTape.gradient: target has no arrays")
        source_natives = [self._source_native(leaf) for leaf in source_leaves]
        for position, native in enumerate(source_natives):
            name = ops.dtype(native)
            if name not in dtypes.FLOATING + dtypes.COMPLEX:
                raise TypeError(
                    f"GradientTape.gradient: source {position} has dtype {name}; gradients are defined "
                    "only for floating or complex sources (cast it with ops.cast)"
                )
        if output_gradients is None:
            out_grads = None
        else:
            out_grads, spec = _leaves(output_gradients)
            if spec != target_spec:
                raise ValueError(
                    "GradientTape.gradient: output_gradients must have the structure of target; "
                    f"expected {target_spec}, received {spec}"
                )
            out_grads = [_native(g) for g in out_grads]
        create_graph = self._another_tape_records()
        was_recording = self._recording
        if was_recording:
            self._pause_all()
        try:
            natives = self._engine.gradient(
                [_native(t) for t in target_leaves],
                source_natives,
                out_grads,
                keep=keep,
                create_graph=create_graph,
            )
        finally:
            if was_recording:
                self._resume_all()
        results = []
        for leaf, native, grad in zip(source_leaves, source_natives, natives):
            if grad is None and unconnected == "zero":
                grad = ops.zeros_like(native)
            if grad is not None and _is_tensor(leaf):
                grad = _result_type(leaf)(grad)
            results.append(grad)
        return optree.tree_unflatten(source_spec, results)

    def jacobian(
        self,
        target: Any,
        sources: Any,
        unconnected_gradients: str = "none",
        parallel_iterations: Any = None,
        experimental_use_pfor: bool = True,
    ) -> Any:
        """Full Jacobian: for each source, an array of shape ``target.shape + source.shape``.

        Vectorized: one batched vector-Jacobian product over the rows of the identity
        (torch: ``autograd.grad(..., is_grads_batched=True)``, i.e. ``torch.func.vmap``
        over the backward pass; MLX: ``mx.vmap`` of ``mx.vjp``; NumPy: one backward pass
        carrying every row as a leading batch axis, see :mod:`ember.autodiff.rules.batched`).
        While an outer tape records (higher order) every backend takes one VJP per row.
        ``parallel_iterations`` and ``experimental_use_pfor`` are TensorFlow's tuning
        knobs and have no effect here.
        """
        if self._used and not self._persistent:
            raise RuntimeError("GradientTape.jacobian: a non-persistent tape can compute gradients only once")
        target_native = _native(target)
        source_leaves, source_spec = _leaves(sources)
        source_natives = [self._source_native(leaf) for leaf in source_leaves]
        target_shape = tuple(ops.shape(target_native))
        n = 1
        for d in target_shape:
            n *= d
        dtype = ops.dtype(target_native)
        seeds = ops.reshape(ops.eye(n, dtype=dtype), (n,) + target_shape)
        rows = self._vjp_rows(target_native, source_natives, seeds, n)
        results = []
        for leaf, native, row in zip(source_leaves, source_natives, rows):
            source_shape = tuple(ops.shape(native))
            if row is None or not n:
                stacked = ops.zeros(target_shape + source_shape, dtype=ops.dtype(native))
            else:
                stacked = ops.reshape(row, target_shape + source_shape)
            if unconnected_gradients == "none" and (row is None or self._unconnected(target_native, native)):
                stacked = None
            results.append(_result_type(leaf)(stacked) if stacked is not None and _is_tensor(leaf) else stacked)
        if not self._persistent:
            self._used = True
            self._engine.release()
        return optree.tree_unflatten(source_spec, results)

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: str = "none", **_: Any) -> Any:
        """Per-example Jacobian: ``target`` (b, *t) and ``source`` (b, *s) give (b, *t, *s).

        Assumes example ``i`` of the target depends only on example ``i`` of the source.
        Vectorized like :meth:`jacobian`: one batched VJP over ``prod(t)`` seeds.
        """
        if self._used and not self._persistent:
            raise RuntimeError("GradientTape.batch_jacobian: a non-persistent tape can compute gradients only once")
        target_native, source_native = _native(target), self._source_native(source)
        t_shape, s_shape = tuple(ops.shape(target_native)), tuple(ops.shape(source_native))
        if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
            raise ValueError(
                "GradientTape.batch_jacobian: target and source need the same leading batch dimension; "
                f"received target {t_shape} and source {s_shape}"
            )
        batch, inner = t_shape[0], t_shape[1:]
        m = 1
        for d in inner:
            m *= d
        dtype = ops.dtype(target_native)
        # seed j puts a one at flat position j of every example's target
        seeds = ops.reshape(ops.broadcast_to(ops.reshape(ops.eye(m, dtype=dtype), (m, 1, m)), (m, batch, m)),
                            (m,) + t_shape)
        (rows,) = self._vjp_rows(target_native, [source_native], seeds, m)
        out_shape = (batch,) + tuple(inner) + tuple(s_shape[1:])
        if rows is None or not m:
            result = ops.zeros(out_shape, dtype=ops.dtype(source_native))
        else:  # (m, b, *s) -> (b, m, *s) -> (b, *t, *s)
            order = (1, 0) + tuple(range(2, 2 + len(s_shape) - 1))
            result = ops.reshape(ops.transpose(rows, order), out_shape)
        if unconnected_gradients == "none" and (rows is None or self._unconnected(target_native, source_native)):
            result = None
        if not self._persistent:
            self._used = True
            self._engine.release()
        return _result_type(source)(result) if result is not None and _is_tensor(source) else result

    def _vjp_rows(self, target: Any, sources: list, seeds: Any, count: int) -> list:
        """For each source, the stacked VJPs of ``target`` with the ``count`` cotangents in ``seeds``.

        Returns one array of shape ``(count, *source.shape)`` per source, or None for a source
        the engine found unconnected. Uses the engine's ``batched_vjp`` when it has one and
        it can serve the call; otherwise one :meth:`_gradient` per seed.
        """
        if count == 0:
            return [None for _ in sources]
        batched = getattr(self._engine, "batched_vjp", None)
        create_graph = self._another_tape_records()
        if batched is not None:
            was_recording = self._recording
            if was_recording:
                self._pause_all()
            try:
                rows = batched(target, sources, seeds, create_graph=create_graph)
            finally:
                if was_recording:
                    self._resume_all()
            if rows is not NotImplemented:
                return rows
        per_seed = [self._gradient(target, sources, seeds[i], "zero", keep=True) for i in range(count)]
        return [ops.stack([grads[k] for grads in per_seed], axis=0) for k in range(len(sources))]

    def _unconnected(self, target: Any, source: Any) -> bool:
        return not self._engine.connected(target, source)


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant: no gradient flows back through it on any backend.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> x = ops.convert_to_tensor(2.0)
        >>> with ember.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = ops.multiply(x, ember.stop_gradient(x))
        >>> float(tape.gradient(y, x))
        2.0
    """
    if _is_tensor(x):
        return type(x)(ops.stop_gradient(x._native))
    return ops.stop_gradient(x)
