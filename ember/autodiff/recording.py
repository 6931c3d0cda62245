"""Op recording for backends whose gradients come from a recorded graph (NumPy, MLX).

While at least one :class:`~ember.autodiff.GradientTape` records on such a backend,
every differentiable name in ``ember.ops`` is re-bound to a *recorder*: it runs the
backend's own function and then offers the call to each recording tape's engine,
which keeps it when an input is something the tape tracks. When the last tape stops
recording, the backend's plain functions are bound again, so code outside a tape
pays nothing.

A recorded op's own implementation may call other ops (an activation written with
``ops.exp``); those inner calls are not recorded (``_depth`` guards it): the tape
sees the op the user called, and its VJP rule covers it. Composite ops
(:mod:`ember.ops._composite`, e.g. ``nn.lstm`` on MLX) are the exception: they
stay unwrapped, so the ops they call are recorded and no rule of their own is needed.

Backends plug in through three optional hooks on their ``autodiff`` module:
``prepare_args(args)`` (e.g. turn NumPy's traced arrays back into plain ndarrays),
``wrap_output(out)`` (e.g. mark a NumPy result as traced so Python operators on it
are recorded too) and ``on_recording(active: bool)`` (e.g. MLX patching ``mx.array``
operators while a tape records).
"""

from __future__ import annotations

from typing import Any, Callable

from ember import backends
from ember import ops
from ember.autodiff.engines import engine_module
import numpy as np

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

_recording: list = []  # engines recording now, outermost first
_depth = 0  # > 0 while a recorded op runs
_installed_for = None  # backend module whose recorders are bound into ember.ops
_cache: dict[str, dict] = {}


def recording_engines() -> list:
    """Engines currently recording (outermost first)."""
    return _recording


def is_recording() -> bool:
    return bool(_recording)


def start(engine: Any) -> None:
    """Begin offering op calls to ``engine`` (binds recorders on the first one).

    Interrupt-safe: the engine is listed only once the recorders are bound, so a
    KeyboardInterrupt in between leaves no engine listed that no tape will ever stop; and
    engines of tapes that died without stopping them are dropped here.
    """
    if engine in _recording:
        return
    _recording[:] = [listed for listed in _recording if _owner_alive(listed)]
    if not _recording:
        _bind_recorders(backends.current())
    _recording.append(engine)


def _owner_alive(engine: Any) -> bool:
    """False for an engine whose tape is gone: its ``with`` exit was cut short (an interrupt
    landing on ``__exit__`` itself), so no one will ever stop it."""
    owner = getattr(engine, "owner", None)
    return owner is None or owner() is not None


def stop(engine: Any) -> None:
    """Stop offering op calls to ``engine`` (restores plain functions after the last one)."""
    if engine in _recording:
        _recording.remove(engine)
    if not _recording:  # also finishes an unbinding an interrupt cut short (idempotent)
        _unbind_recorders()


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
                if name in NOT_DIFFERENTIABLE or getattr(function, "__ember_composite__", False):
                    continue  # composites (ember.ops._composite) stay plain: their inner ops are recorded
                wrapped[name] = _recorder(qualified, function, prepare, wrap)
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
    stop_gradient.__wrapped__ = function
    return stop_gradient


_PLAIN_TYPES: set = {int, float, bool, complex, str, type(None), slice}  # grown with array types seen


def _unwrap_tensors(args: tuple) -> tuple:
    """Replace ``ember.Tensor`` arguments (and Tensors inside lists) by their native arrays."""
    plain = _PLAIN_TYPES
    for arg in args:
        kind = type(arg)
        if kind not in plain:
            if kind is list or kind is tuple or getattr(kind, "__ember_tensor__", False):
                return _unwrap_slow(args)
            plain.add(kind)  # neither a Tensor nor a sequence: never needs unwrapping
    return args


def _unwrap_slow(args: tuple) -> tuple:
    out = None
    for i, arg in enumerate(args):
        if getattr(type(arg), "__ember_tensor__", False):
            out = list(args) if out is None else out
            out[i] = arg._native
        elif type(arg) in (list, tuple) and any(getattr(type(a), "__ember_tensor__", False) for a in arg):
            out = list(args) if out is None else out
            out[i] = type(arg)(a._native if getattr(type(a), "__ember_tensor__", False) else a for a in arg)
    return args if out is None else tuple(out)


def _recorder(name: str, function: Callable, prepare: Callable | None, wrap: Callable | None) -> Callable:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        global _depth
        if _depth or not _recording:
            return function(*args, **kwargs)
        args = _unwrap_tensors(args)
        call_kwargs = kwargs
        if kwargs:
            kwargs = dict(zip(kwargs, _unwrap_tensors(tuple(kwargs.values()))))
            call_kwargs = kwargs if prepare is None else dict(zip(kwargs, prepare(tuple(kwargs.values()))))
        call_args = args if prepare is None else prepare(args)
        outer = _depth
        try:  # restored, not decremented: an interrupt before the increment cannot leave it raised
            _depth = outer + 1
            out = function(*call_args, **call_kwargs)
        finally:
            _depth = outer
        # Wrap before recording: the engines key slots by the identity of the object the
        # caller receives (a wrapped view is a new object).
        recorded_out = out if wrap is None else wrap(out)
        kept = False
        for engine in _recording:
            kept = engine.record(name, function, args, kwargs, recorded_out) or kept
        return recorded_out if kept else out

    recorded.__name__ = function.__name__
    recorded.__doc__ = function.__doc__
    recorded.__wrapped__ = function
    return recorded


def _composite_dropout(function: Callable) -> Callable:
    """Dropout inside a tape: ``x * mask`` with the mask a constant, so the gradient is the mask.

    The mask is the backend's own dropout applied to ones, so it draws exactly the random
    numbers the plain call would (same seed, same mask, with or without a tape).
    """

    def dropout(x: Any, rate: Any, noise_shape: Any = None, seed: Any = None) -> Any:
        if _depth or not _recording:
            return function(x, rate, noise_shape=noise_shape, seed=seed)

        (x,) = _unwrap_tensors((x,))
        mask = function(ops.ones_like(x), rate, noise_shape=noise_shape, seed=seed)
        return ops.multiply(x, mask)

    dropout.__name__ = "dropout"
    dropout.__doc__ = function.__doc__
    dropout.__wrapped__ = function
    return dropout


def run_recorded(name: str, function: Callable, args: tuple, kwargs: dict) -> Any:
    """Call ``function`` as one op named ``name``, offered to every recording tape.

    Used for ops made at run time (custom gradients): the ops ``function`` calls are not
    recorded, the call itself is, with the backend's ``prepare_args``/``wrap_output`` hooks.
    """
    if _depth or not _recording:
        return function(*args, **kwargs)
    autodiff = _autodiff_module(backends.current())
    prepare = getattr(autodiff, "prepare_args", None)
    wrap = getattr(autodiff, "wrap_output", None)
    return _recorder(name, function, prepare, wrap)(*args, **kwargs)
