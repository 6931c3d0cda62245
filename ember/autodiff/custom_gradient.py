"""Custom gradients: ``ember.custom_gradient`` (Keras's signature) and ``ember.custom_vjp``.

A function decorated with :func:`custom_gradient` returns ``(outputs, grad_fn)``;
``grad_fn(upstream)`` receives the cotangent of the outputs (one per output, as
positional arguments, when ``outputs`` is a tuple) and returns one gradient per
positional argument of the function (a single value when there is one argument;
``None`` for an argument that gets no gradient). That is ``keras.ops.custom_gradient``.

:func:`custom_vjp` is the JAX-style form: ``f.defvjp(fwd, bwd)`` with
``fwd(*args) -> (outputs, residuals)`` and ``bwd(residuals, upstream) -> grads``.

Each backend uses its own mechanism, so a custom gradient composes with everything that
differentiates on that backend: ``GradientTape``, ``value_and_grad``, the compiled MLX
training step and the fused torch step inside ``fit``:

* torch: a ``torch.autograd.Function``;
* MLX: an ``mx.custom_function`` with a custom VJP (recorded as one op by a tape);
* NumPy: one recorded node whose VJP rule is ``grad_fn``.

Higher order: when the gradient itself is differentiated (nested tapes), the forward is
recomputed from the inputs before ``grad_fn`` runs, so every value ``grad_fn`` uses is a
function of the inputs and its own derivative is taken by the backend, the same on every
backend. Write ``grad_fn`` with ``ember.ops`` for that to work. A ``grad_fn`` built from
non-differentiable ops (``sign``, comparisons) has a zero second derivative.

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> @ember.custom_gradient
    ... def spike(v):
    ...     def grad_fn(upstream):  # a smooth surrogate for the step's derivative
    ...         return ops.divide(upstream, ops.square(ops.add(ops.abs(v), 1.0)))
    ...     return ops.cast(ops.greater(v, 0.0), "float32"), grad_fn
    >>> v = ops.convert_to_tensor([-1.0, 0.5, 3.0])
    >>> ops.to_numpy(spike(v)).tolist()
    [0.0, 1.0, 1.0]
    >>> with ember.GradientTape() as tape:
    ...     tape.watch(v)
    ...     s = ops.sum(spike(v))
    >>> ops.to_numpy(tape.gradient(s, v)).tolist()
    [0.25, 0.4444444477558136, 0.0625]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember import backends
from ember.autodiff.engines import engine_module


def _is_tensor(value: Any) -> bool:
    return getattr(type(value), "__ember_tensor__", False)


def _unwrap(args: tuple) -> tuple[tuple, Any]:
    """Native arrays for ``ember.Tensor`` arguments; the Tensor type to wrap outputs in (or None)."""
    tensor_type = None
    out = []
    for arg in args:
        if _is_tensor(arg):
            tensor_type = type(arg)
            out.append(arg._native)
        else:
            out.append(arg)
    return tuple(out), tensor_type


def _wrap(outputs: Any, tensor_type: Any) -> Any:
    if tensor_type is None:
        return outputs
    if isinstance(outputs, tuple):
        return tuple(tensor_type(o) for o in outputs)
    return tensor_type(outputs)


def split_result(result: Any, name: str) -> tuple[Any, Callable]:
    """``(outputs, grad_fn)`` from what a custom-gradient function returned, checked."""
    if not isinstance(result, tuple) or len(result) != 2 or not callable(result[1]):
        raise TypeError(
            f"custom_gradient: {name} must return a pair (outputs, grad_fn) with grad_fn callable; "
            f"received {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, tuple) else "")
        )
    outputs, grad_fn = result
    if isinstance(outputs, list):
        outputs = tuple(outputs)
    outputs, _ = _unwrap(outputs) if isinstance(outputs, tuple) else _unwrap((outputs,))
    return (outputs if isinstance(result[0], (tuple, list)) else outputs[0]), grad_fn


def call_grad_fn(grad_fn: Callable, upstream: Any, n_args: int, name: str) -> tuple:
    """``grad_fn(*upstream)`` as a tuple of ``n_args`` native gradients (None allowed), checked."""
    cotangents = upstream if isinstance(upstream, tuple) else (upstream,)
    grads = grad_fn(*cotangents)
    if isinstance(grads, list):
        grads = tuple(grads)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != n_args:
        raise ValueError(
            f"custom_gradient: the grad_fn of {name} must return one gradient per positional argument "
            f"({n_args}), received {len(grads)}"
        )
    return tuple(g._native if _is_tensor(g) else g for g in grads)


def custom_gradient(f: Callable) -> Callable:
    """Decorate ``f(*args) -> (outputs, grad_fn)`` so its gradient is ``grad_fn`` on every backend.

    Args:
        f: a function of arrays (positional; keyword arguments are passed through as
            constants) returning its outputs (an array or a tuple of arrays) and
            ``grad_fn(*upstream)``, which returns one gradient per positional argument.

    Returns:
        A function with ``f``'s signature that returns only the outputs.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> @ember.custom_gradient
        ... def clip_gradient(x):
        ...     return ops.multiply(x, 1.0), lambda g: ops.clip(g, -1.0, 1.0)
        >>> x = ops.convert_to_tensor([1.0, 2.0])
        >>> ops.to_numpy(ember.grad(lambda x: ops.sum(ops.multiply(clip_gradient(x), 5.0)))(x)).tolist()
        [1.0, 1.0]
    """
    if not callable(f):
        raise TypeError(f"custom_gradient: expected a function, received {type(f).__name__}")
    name = getattr(f, "__qualname__", repr(f))

    def forward(*args: Any, **kwargs: Any) -> tuple:
        return split_result(f(*args, **kwargs), name)

    def backward(grad_fn: Callable, upstream: Any, n_args: int) -> tuple:
        return call_grad_fn(grad_fn, upstream, n_args, name)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        natives, tensor_type = _unwrap(args)
        engine = engine_module(backends.current().name)
        outputs = engine.call_custom_gradient(forward, backward, natives, kwargs)
        return _wrap(outputs, tensor_type)

    wrapper.__ember_custom_gradient__ = True  # type: ignore[attr-defined]  # a marker on the function object
    return wrapper


class custom_vjp:  # noqa: N801  (JAX's name)
    """JAX-style custom VJP: ``f = custom_vjp(fun); f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (outputs, residuals)`` runs the forward pass and saves what the
    backward needs; ``bwd(residuals, upstream) -> grads`` returns one gradient per
    positional argument (a tuple, or a single value for one argument). Until ``defvjp``
    is called, calling ``f`` raises.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> @ember.custom_vjp
        ... def square(x):
        ...     return ops.square(x)
        >>> square.defvjp(lambda x: (ops.square(x), x), lambda x, g: ops.multiply(ops.multiply(g, x), 2.0))
        >>> float(ember.grad(square)(ops.convert_to_tensor(3.0)))
        6.0
    """

    def __init__(self, fun: Callable) -> None:
        if not callable(fun):
            raise TypeError(f"custom_vjp: expected a function, received {type(fun).__name__}")
        self.fun = fun
        self._custom: Callable | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward (``fwd(*args) -> (outputs, residuals)``) and backward (``bwd(residuals, g)``)."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError("custom_vjp.defvjp: fwd and bwd must be callables")

        def forward(*args: Any, **kwargs: Any) -> tuple:
            result = fwd(*args, **kwargs)
            if not isinstance(result, tuple) or len(result) != 2:
                raise TypeError(
                    f"custom_vjp: fwd of {getattr(self.fun, '__qualname__', self.fun)} must return "
                    "(outputs, residuals)"
                )
            outputs, residuals = result
            return outputs, lambda *upstream: bwd(residuals, upstream[0] if len(upstream) == 1 else upstream)

        forward.__qualname__ = getattr(self.fun, "__qualname__", "custom_vjp")
        self._custom = custom_gradient(forward)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._custom is None:
            raise RuntimeError(
                f"custom_vjp: call defvjp(fwd, bwd) on {getattr(self.fun, '__qualname__', self.fun)} "
                "before calling it"
            )
        return self._custom(*args, **kwargs)
