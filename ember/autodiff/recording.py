"""Op recording for backends whose gradients come from a recorded graph (NumPy, MLX).

While at least one :class:`~ember.autodiff.GradientTape` records on such a backend,
every differentiable name in ``ember.ops`` is re-bound to a *recorder*
(:func:`ember.recorded.calls.recorder`): it runs the backend's own function and then
offers the call to each recording tape's engine, which keeps it when an input is
something the tape tracks. When the last tape stops recording, the backend's plain
functions are bound again, so code outside a tape pays nothing.

A recorded op's own implementation may call other ops (an activation written with
``ops.exp``); those inner calls are not recorded (the depth kept in
:mod:`ember.recorded.calls` guards it): the tape sees the op the user called, and its
VJP rule covers it. Composite ops (:mod:`ember.ops.extra.composites`, e.g. ``nn.lstm`` on
MLX) are the exception: ``ember.ops`` binds them for the backends that have no kernel of
their own, they are in no backend's op tables, so they stay unwrapped and the ops they
call are recorded (no rule of their own is needed).

This module starts and stops the engines (:func:`start`, :func:`stop`) and binds the
recorders. Engines are listed per thread (a tape records its own thread's ops only);
the recorders stay bound while an engine records in *any* thread (a count kept under a
lock taken at ``start``/``stop`` only, never per op): a recorder called by a thread with
no engine of its own runs the plain function. The list of recording engines, the depth
and the recorder itself live below the backends in :mod:`ember.recorded.calls` (the MLX
engine, in its backend package, shares them), and :func:`recording_engines`/:func:`is_recording` are re-exported here.

Backends plug in through three optional hooks on their ``autodiff`` module:
``prepare_args(args)`` (e.g. turn NumPy's traced arrays back into plain ndarrays),
``wrap_output(out)`` (e.g. mark a NumPy result as traced so Python operators on it
are recorded too) and ``on_recording(active: bool)`` (e.g. MLX patching ``mx.array``
operators while a tape records).

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.autodiff import recording
    >>> with ember.using_backend("numpy"):
    ...     plain = ops.exp
    ...     with ember.GradientTape():
    ...         during = recording.is_recording(), ops.exp is plain, ops.exp.__wrapped__ is plain.__wrapped__
    ...     after = recording.is_recording(), ops.exp is plain
    >>> during, after
    ((True, False, True), (False, True))
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import backends, ops
from ember.autodiff.engines import engine_module
from ember.recorded import calls
from ember.recorded.calls import _local, is_recording, recording_engines

# Ops whose result never carries a gradient: they run unrecorded even inside a tape.
NOT_DIFFERENTIABLE = frozenset({
    "to_numpy", "is_array", "dtype", "shape", "ndim", "size", "get_device",
    "stop_gradient", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    "eye", "arange", "linspace", "sign", "round", "floor", "ceil", "isnan", "isinf",
    "isfinite", "logical_not", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "isclose", "argmax",
    "argmin", "all", "any", "count_nonzero", "argsort", "nonzero", "one_hot",
    "floor_divide",
})
# Every op of ops.random is non-differentiable except dropout, recorded as a composite
# (a constant mask times the input) so replaying or differentiating it never redraws.

_installed_for = None  # backend module whose recorders are bound into ember.ops
_cache: dict[str, dict] = {}
_bound_lock = threading.RLock()  # taken by start/stop only (binding recorders), never per op
_all_engines: list = []  # engines recording in any thread: recorders stay bound while non-empty


def start(engine: Any) -> None:
    """Begin offering op calls to ``engine`` (binds recorders on the first one).

    Interrupt-safe: the engine is listed only once the recorders are bound, so a
    KeyboardInterrupt in between leaves no engine listed that no tape will ever stop; and
    engines of tapes that died without stopping them are dropped here.
    """
    engines = _local.state.engines
    if engine in engines:
        return
    engines[:] = [listed for listed in engines if _owner_alive(listed)]
    try:
        _bound_lock.acquire()
        _all_engines[:] = [listed for listed in _all_engines if _owner_alive(listed)]
        if not _all_engines or _installed_for is None:  # None: a backend switch bound the plain functions
            _bind_recorders(backends.current())
        _all_engines.append(engine)
        engines.append(engine)
    finally:  # not ``with``: an interrupt on the line ending a ``with`` block skips its exit (lock left held)
        if _bound_lock._is_owned():  # type: ignore[attr-defined]  # RLock's test: this thread holds it
            _bound_lock.release()


def _owner_alive(engine: Any) -> bool:
    """False for an engine whose tape is gone: its ``with`` exit was cut short (an interrupt
    landing on ``__exit__`` itself), so no one will ever stop it."""
    owner = getattr(engine, "owner", None)
    return owner is None or owner() is not None


def stop(engine: Any) -> None:
    """Stop offering op calls to ``engine`` (restores plain functions after the last one)."""
    engines = _local.state.engines
    if engine in engines:
        engines.remove(engine)
    try:
        _bound_lock.acquire()
        if engine in _all_engines:
            _all_engines.remove(engine)
        if not _all_engines:  # also finishes an unbinding an interrupt cut short (idempotent)
            _unbind_recorders()
    finally:  # not ``with``: an interrupt on the line ending a ``with`` block skips its exit (lock left held)
        if _bound_lock._is_owned():  # type: ignore[attr-defined]  # RLock's test: this thread holds it
            _bound_lock.release()


def _forget_binding(backend: Any) -> None:
    """Backend listener: a switch binds the new backend's plain functions into ``ember.ops``, so no
    recorders are bound any more; the next tape binds them again (even if a tape that never
    stopped, e.g. one kept alive by a traceback, is still listed)."""
    global _installed_for
    previous, _installed_for = _installed_for, None
    if previous is not None and previous is not backend:
        hook = getattr(_autodiff_module(previous), "on_recording", None)
        if hook is not None:
            hook(False)  # e.g. MLX's patched array operators back to its own


def _bind_recorders(backend: Any) -> None:
    global _installed_for
    try:
        ops._install(_recorder_tables(backend))
        _installed_for = backend
        hook = getattr(_autodiff_module(backend), "on_recording", None)
        if hook is not None:
            hook(True)
    except BaseException:
        _installed_for = backend
        _unbind_recorders()
        raise


def _unbind_recorders() -> None:
    """Bind the plain functions again (recorders bound with nothing recording only cost time)."""
    global _installed_for
    backend = _installed_for
    if backend is None:
        return
    try:
        hook = getattr(_autodiff_module(backend), "on_recording", None)
        if hook is not None:
            hook(False)
    finally:
        if backends.current() is backend:
            ops._rebind(backend)
        _installed_for = None


def _autodiff_module(backend: Any) -> Any:
    # The engine module of the backend (NumPy's lives in ember.autodiff, not in the backend
    # package, so ``backend.autodiff`` would miss its hooks).

    return engine_module(backend.name)


def _recorder_tables(backend: Any) -> dict:
    tables = _cache.get(backend.name)
    if tables is None:
        autodiff = _autodiff_module(backend)
        prepare = getattr(autodiff, "prepare_args", None)
        wrap = getattr(autodiff, "wrap_output", None)
        tables = {}
        for namespace, table in backend.op_tables().items():
            wrapped = {}
            for name, function in table.items():
                qualified = name if namespace == "core" else f"{namespace}.{name}"
                if namespace == "random":
                    if name == "dropout":
                        wrapped[name] = _composite_dropout(function)
                    continue
                if name == "stop_gradient":
                    wrapped[name] = _fresh_stop_gradient(function)
                    continue
                core_recorder = tables.get("core", {}).get(name) if namespace != "core" else None
                if core_recorder is not None and getattr(core_recorder, "__wrapped__", None) is function:
                    wrapped[name] = core_recorder  # an alias of a core op (ops.stats.sum): recorded as that op
                    continue
                if name in NOT_DIFFERENTIABLE:
                    continue
                wrapped[name] = calls.recorder(qualified, function, prepare, wrap)
            tables[namespace] = wrapped
        _cache[backend.name] = tables
    return tables


def _fresh_stop_gradient(function: Callable) -> Callable:
    """``stop_gradient`` that never hands back its (possibly tracked) input object itself.

    Engines match arrays to the graph by identity, so a backend returning ``x`` unchanged
    (NumPy's plain ndarray) would let gradients flow through the "stopped" value.
    """

    def stop_gradient(x: Any) -> Any:
        out = function(x)
        if out is x or out is getattr(x, "_native", None):
            if isinstance(out, np.ndarray):
                out = out.view(np.ndarray)
        return out

    stop_gradient.__doc__ = function.__doc__
    stop_gradient.__wrapped__ = function  # type: ignore[attr-defined]  # as functools.wraps
    return stop_gradient


def _composite_dropout(function: Callable) -> Callable:
    """Dropout inside a tape: ``x * mask`` with the mask a constant, so the gradient is the mask.

    The mask is the backend's own dropout applied to ones, so it draws exactly the random
    numbers the plain call would (same seed, same mask, with or without a tape).
    """

    def dropout(x: Any, rate: Any, noise_shape: Any = None, seed: Any = None) -> Any:
        state = _local.state
        if state.depth or not state.engines:
            return function(x, rate, noise_shape=noise_shape, seed=seed)

        (x,) = calls.unwrap_tensors((x,))
        mask = function(ops.ones_like(x), rate, noise_shape=noise_shape, seed=seed)
        return ops.multiply(x, mask)

    dropout.__name__ = "dropout"
    dropout.__doc__ = function.__doc__
    dropout.__wrapped__ = function  # type: ignore[attr-defined]  # as functools.wraps
    return dropout


def run_recorded(name: str, function: Callable, args: tuple, kwargs: dict) -> Any:
    """Call ``function`` as one op named ``name``, offered to every recording tape.

    Used for ops made at run time (custom gradients): the ops ``function`` calls are not
    recorded, the call itself is, with the backend's ``prepare_args``/``wrap_output`` hooks.
    """
    state = _local.state
    if state.depth or not state.engines:
        return function(*args, **kwargs)
    autodiff = _autodiff_module(backends.current())
    prepare = getattr(autodiff, "prepare_args", None)
    wrap = getattr(autodiff, "wrap_output", None)
    return calls.recorder(name, function, prepare, wrap)(*args, **kwargs)


backends.on_backend_change(_forget_binding)

__all__ = ["NOT_DIFFERENTIABLE", "is_recording", "recording_engines", "run_recorded", "start", "stop"]
