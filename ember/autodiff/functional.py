"""Functional autodiff over pytrees: ``value_and_grad``, ``grad``, ``jacobian``, ``vjp``.

Each is built on :class:`~ember.autodiff.GradientTape`, so it runs on every backend
with the backend's own machinery (torch autograd, MLX transforms, NumPy's engine).

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> def loss(params, x):
    ...     return ops.sum(ops.square(ops.multiply(params["w"], x)))
    >>> params = {"w": ops.convert_to_tensor([1.0, 2.0])}
    >>> value, grads = ember.value_and_grad(loss)(params, ops.convert_to_tensor([3.0, 1.0]))
    >>> float(value), ops.to_numpy(grads["w"]).tolist()
    (13.0, [18.0, 4.0])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import optree

from ember import backends, dtypes, ops
from ember.autodiff import recording
from ember.autodiff.engines import engine_module
from ember.autodiff.tape import GradientTape


def _argnums(argnums: int | Sequence[int], n_args: int, caller: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for num in nums:
        if not isinstance(num, int) or not -n_args <= num < n_args:
            raise ValueError(f"{caller}: argnums={argnums!r} is out of range for {n_args} positional arguments")
    return tuple(num % n_args for num in nums)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Make a function returning ``(value, grads)`` (``((value, aux), grads)`` with ``has_aux``).

    Args:
        fn: returns a scalar (or ``(scalar, aux)`` when ``has_aux``). A non-scalar value
            is summed for the gradient (TensorFlow's rule, on every backend); the value
            returned is the one ``fn`` returned.
        argnums: which positional argument(s) to differentiate; each may be a pytree.
        has_aux: ``fn`` returns ``(value, aux)``; aux is passed through undifferentiated.

    Returns:
        A function with ``fn``'s signature. ``grads`` has the structure of the chosen
        argument, or a tuple of them when ``argnums`` is a sequence.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> loss_and_grad = ember.value_and_grad(lambda w: ops.sum(ops.square(w)))
        >>> value, grad = loss_and_grad(ops.convert_to_tensor([1.0, -2.0]))
        >>> ops.to_numpy(value).tolist(), ops.to_numpy(grad).tolist()
        (5.0, [2.0, -4.0])
    """

    if not callable(fn):
        raise TypeError(f"value_and_grad: fn must be callable, received {fn!r}")

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "value_and_grad")
        chosen = [args[i] for i in nums]
        direct = getattr(engine_module(backends.current().name), "value_and_grad_leaves", None)
        if direct is not None and not recording.is_recording():
            return _direct_value_and_grad(direct, fn, args, kwargs, nums, argnums, has_aux)
        with GradientTape() as tape:
            tape.watch(chosen)
            out = fn(*args, **kwargs)
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise ValueError("value_and_grad(has_aux=True): fn must return a pair (value, aux)")
            value, aux = out
        else:
            value, aux = out, None
        grads = tape.gradient(value, chosen, unconnected_gradients="zero")
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((value, aux), grads) if has_aux else (value, grads)

    return wrapped


def _direct_value_and_grad(direct: Callable, fn: Callable, args: tuple, kwargs: dict, nums: tuple,
                           argnums: Any, has_aux: bool) -> Any:
    """One-pass value and gradient through a backend's own transform (MLX)."""
    leaves, spec = optree.tree_flatten([args[i] for i in nums], none_is_leaf=False)
    natives = [leaf._native if _is_tensor(leaf) else leaf for leaf in leaves]
    for position, native in enumerate(natives):
        name = ops.dtype(native)
        if name not in dtypes.FLOATING + dtypes.COMPLEX:
            raise TypeError(
                f"value_and_grad: source {position} has dtype {name}; gradients are defined only for "
                "floating or complex sources (cast it with ops.cast)"
            )
    aux_box: list = []

    def of_leaves(values: list) -> Any:
        rebuilt = [type(leaf)(v) if _is_tensor(leaf) else v for leaf, v in zip(leaves, values)]
        chosen = optree.tree_unflatten(spec, rebuilt)
        call_args = list(args)
        for i, value in zip(nums, chosen):
            call_args[i] = value
        out = fn(*call_args, **kwargs)
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise ValueError("value_and_grad(has_aux=True): fn must return a pair (value, aux)")
            out, aux = out
            aux_box.append(aux)
        aux_box.insert(0, out)
        native = out._native if _is_tensor(out) else out
        if getattr(native, "ndim", 0):  # a non-scalar value: the gradient of its sum, as the tape gives
            native = native.sum()
        return native

    _, grads = direct(of_leaves, natives)
    value = aux_box[0]
    grads = [type(leaf)(g) if _is_tensor(leaf) else g for leaf, g in zip(leaves, grads)]
    grads = optree.tree_unflatten(spec, grads)
    grads = grads[0] if isinstance(argnums, int) else tuple(grads)
    return ((value, aux_box[1]), grads) if has_aux else (value, grads)


def _is_tensor(value: Any) -> bool:
    return getattr(type(value), "__ember_tensor__", False)


def grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Like :func:`value_and_grad` but return only the gradients (and aux with ``has_aux``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> float(ember.grad(lambda x: ops.multiply(x, x))(ops.convert_to_tensor(3.0)))
        6.0
    """
    inner = value_and_grad(fn, argnums, has_aux)

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        (value_aux, grads) = inner(*args, **kwargs)
        return (grads, value_aux[1]) if has_aux else grads

    return wrapped


def jacobian(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """Make a function returning the Jacobian of ``fn`` (one array output) w.r.t. ``argnums``.

    Each Jacobian has shape ``output.shape + argument.shape``.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> jac = ember.jacobian(lambda x: ops.multiply(x, x))
        >>> ops.to_numpy(jac(ops.convert_to_tensor([1.0, 2.0]))).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacobian")
        chosen = [args[i] for i in nums]
        with GradientTape(persistent=True) as tape:
            tape.watch(chosen)
            out = fn(*args, **kwargs)
        jac = tape.jacobian(out, chosen, unconnected_gradients="zero")
        return jac[0] if isinstance(argnums, int) else tuple(jac)

    return wrapped


def vjp(fn: Callable, *primals: Any) -> tuple[Any, Callable]:
    """Evaluate ``fn(*primals)`` and return ``(outputs, vjp_fn)``.

    ``vjp_fn(cotangents)`` returns a tuple with one gradient per primal (each with the
    primal's pytree structure). It may be called more than once.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> outputs, vjp_fn = ember.vjp(lambda x: ops.multiply(x, 3.0), ops.convert_to_tensor([1.0, 2.0]))
        >>> (grad,) = vjp_fn(ops.ones((2,)))
        >>> ops.to_numpy(outputs).tolist(), ops.to_numpy(grad).tolist()
        ([3.0, 6.0], [3.0, 3.0])
    """
    with GradientTape(persistent=True) as tape:
        tape.watch(list(primals))
        outputs = fn(*primals)

    def vjp_fn(cotangents: Any) -> tuple:
        out_leaves, out_spec = optree.tree_flatten(outputs, none_is_leaf=False)
        cot_leaves, cot_spec = optree.tree_flatten(cotangents, none_is_leaf=False)
        if cot_spec != out_spec:
            raise ValueError(
                f"vjp_fn: cotangents must have the structure of the outputs; expected {out_spec}, received {cot_spec}"
            )
        grads = tape.gradient(out_leaves, list(primals), output_gradients=cot_leaves, unconnected_gradients="zero")
        return tuple(grads)

    return outputs, vjp_fn
