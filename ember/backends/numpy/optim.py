"""Fused optimizer kernels for the NumPy backend: ``SGD`` and ``Adam``/``AdamW``.

The math of every optimizer is written once, in :mod:`ember.training.optimizers`
(``update_variable``, op by op). For the optimizers ``fit`` uses most, this module runs the same
formulas as NumPy ``out=`` ufuncs over each parameter, in place and all or nothing
(:func:`plan_in_place`, then :func:`write_in_place`): everything the update needs is computed
first, then params, slots and the step counter are written in place by NumPy ufuncs only (C code:
no Python function is entered from the first write to the last), which ``fit`` runs under held
signals (:mod:`ember.backends._held_signals`) on its own arrays, or on copies where it must not
write the given ones.

:meth:`Optimizer.plan_in_place <ember.optimizers.Optimizer.plan_in_place>` dispatches here; the
tests compare these kernels with the generic path. :func:`supports` is False: the in-place updates
of ``apply_gradients_inplace`` take the generic path on NumPy.

Example:
    Through the optimizer, with NumPy the active backend:

    >>> import numpy as np
    >>> import ember
    >>> from ember import optimizers
    >>> from ember.backends.numpy import optim
    >>> ember.set_backend("numpy")
    >>> opt = optimizers.Adam(0.1)
    >>> params = {"w": np.ones(2, "float32")}
    >>> state = opt.init(params)
    >>> optim.write_in_place(opt.plan_in_place({"w": np.ones(2, "float32")}, state, params))
    >>> [round(float(w), 4) for w in params["w"]], int(state["iterations"])
    ([0.9, 0.9], 1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# The optimizers name their kernels (``Optimizer.fused_kernel``): this module imports none of them.
_KERNEL_NAMES = ("sgd", "adam")


def _kernel_name(optimizer: Any) -> str | None:
    return getattr(optimizer, "kernel_name", None)


def supports(optimizer: Any) -> bool:
    """Whether an in-place kernel exists for ``optimizer`` here: never on NumPy (see the module docstring)."""
    return False


def in_place_slots(optimizer: Any, params: list) -> tuple[str, ...] | None:
    """The slots :func:`write_in_place` updates, or None when it has no kernel for these.

    Kernels exist for ``SGD``, ``Adam`` and ``AdamW`` (not their subclasses) without gradient
    clipping or loss scaling, on float32/float64 arrays.

    Example:
        >>> import numpy as np
        >>> from ember import optimizers
        >>> from ember.backends.numpy import optim
        >>> optim.in_place_slots(optimizers.Adam(), [np.ones(2)])
        ('momentum', 'velocity')
        >>> optim.in_place_slots(optimizers.Adam(clipnorm=1.0), [np.ones(2)]) is None
        True
    """
    name = _kernel_name(optimizer)
    if (name not in _KERNEL_NAMES or optimizer.clipnorm or optimizer.clipvalue or optimizer.global_clipnorm
            or optimizer.loss_scale_factor is not None
            or not all([isinstance(p, np.ndarray) and p.dtype in (np.float32, np.float64) for p in params])):
        return None
    if name == "sgd":
        return ("momentum",) if optimizer.momentum != 0.0 else ()
    return ("momentum", "velocity") + (("velocity_hat",) if optimizer.amsgrad else ())


def _one_minus_power(base: float, t: float) -> float:
    return -math.expm1(t * math.log(base)) if base > 0.0 else 1.0 - base ** t


def _plain(value: Any) -> Any:
    """A traced array (the tape's view) as a plain ndarray sharing its memory."""
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        return value.view(np.ndarray)
    return value


# ------------------------------------------------------------- in place, all or nothing
# ``fit``'s step for SGD/Adam/AdamW: plan_in_place computes (and allocates) everything the update
# needs while nothing is written yet; write_in_place then updates params, slots and the step
# counter in place with NumPy ufuncs only (C code: no Python function is entered, nothing is
# allocated), under the caller's held signals (ember.backends._held_signals), so once begun it
# finishes. The ufuncs are bound here once (a module attribute read is a dict lookup, no call).
_add, _subtract, _multiply, _divide, _sqrt, _maximum = np.add, np.subtract, np.multiply, np.divide, np.sqrt, np.maximum


def _root(array: np.ndarray) -> Any:
    """The array (or buffer) whose memory ``array`` views."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else array.base


def writable_in_place(params: list, slots: list, iterations: Any) -> bool:
    """Whether :func:`write_in_place` can update these arrays: writeable ndarrays, each slot of its
    parameter's shape and dtype (``slots``: one list per written slot, aligned with ``params``), and a
    writeable 0-d ndarray step counter. Otherwise a write could fail half-way (or cast a slot of
    another dtype): the optimizer's pure ``apply_gradients`` serves instead.

    Example:
        >>> import numpy as np
        >>> from ember.backends.numpy import optim
        >>> w, counter = np.ones(2, "float32"), np.zeros((), "int64")
        >>> optim.writable_in_place([w], [[np.zeros(2, "float32")]], counter)
        True
        >>> optim.writable_in_place([w], [[np.zeros(2, "float64")]], counter)   # a float64 slot
        False
    """
    if not (isinstance(iterations, np.ndarray) and iterations.ndim == 0 and iterations.flags.writeable):
        return False
    for i, param in enumerate(params):
        if not (isinstance(param, np.ndarray) and param.flags.writeable):
            return False
        for values in slots:
            slot = values[i]
            if not (isinstance(slot, np.ndarray) and slot.shape == param.shape and slot.dtype == param.dtype
                    and slot.flags.writeable):
                return False
    return True


def plan_in_place(optimizer: Any, grads: list, params: list, slots: dict, step: Any, lr: Any, decay: list | None,
                  scratch: list, iterations: Any) -> tuple:
    """Everything :func:`write_in_place` needs, computed first (nothing is written here).

    Args:
        optimizer: an Ember optimizer for which :func:`in_place_slots` is not None.
        grads: one gradient (or None: skip that parameter) per parameter.
        params: the parameters, written in place by :func:`write_in_place`.
        slots: ``{slot_name: list aligned with params}``, written likewise (distinct arrays sharing
            no memory with one another or the params).
        step: the 1-based step number (int, float or 0-d array).
        lr: the learning rate for this step (float or 0-d array).
        decay: per-parameter flags for weight decay (None: all, when ``weight_decay`` is set).
        scratch: one array per parameter of its shape and dtype, overwritten by the write (they
            may share memory with one another: the write uses one at a time), or None entries
            (a new array is made for each).
        iterations: the optimizer's 0-d step counter, incremented in place by the write.

    Raises:
        TypeError: no kernel for this optimizer, or arrays it cannot write in place
            (:func:`writable_in_place`).
        ValueError: every gradient is None, or a scratch array of another shape or dtype.
    """
    names = in_place_slots(optimizer, params)
    written = [slots[name] for name in names] if names is not None else []
    if names is None or not writable_in_place(params, written, iterations):
        raise TypeError(f"plan_in_place: no in-place NumPy kernel for {type(optimizer).__name__} on these arrays "
                        f"(SGD/Adam/AdamW on writeable float32/float64 arrays, slots of their parameters' shape "
                        f"and dtype, a 0-d array step counter); use apply_gradients")
    active = [i for i, g in enumerate(grads) if g is not None]
    if not active:
        raise ValueError(f"{type(optimizer).__name__}: no gradients provided for any variable (every grad is None)")
    p = [_plain(params[i]) for i in active]
    s = [[_plain(values[i]) for i in active] for values in written]
    written_roots = {id(_root(array)) for array in p + [value for values in s for value in values]}
    g, d = [], []
    for k, i in enumerate(active):
        grad = _plain(grads[i])
        if grad.dtype != p[k].dtype:
            grad = grad.astype(p[k].dtype)
        elif id(_root(grad)) in written_roots:  # the write would change it before reading it
            grad = grad.copy()
        g.append(grad)
        spare = scratch[i]
        if spare is None:
            spare = np.empty_like(p[k])
        elif not (isinstance(spare, np.ndarray) and spare.shape == p[k].shape and spare.dtype == p[k].dtype
                  and spare.flags.writeable):
            raise ValueError(f"plan_in_place: scratch array {i} must be a writeable array of shape {p[k].shape} "
                             f"and dtype {p[k].dtype}, received {getattr(spare, 'shape', type(spare).__name__)}")
        d.append(_plain(spare))
    lr_f, t = float(np.asarray(lr)), float(np.asarray(step))
    rate = optimizer.weight_decay
    shrink = [lr_f * rate if rate is not None and (decay is None or decay[i]) else None for i in active]
    constants: tuple
    if _kernel_name(optimizer) == "sgd":
        constants = (lr_f, optimizer.momentum, bool(optimizer.nesterov))
        return ("sgd", p, g, s, d, shrink, constants, iterations)
    alpha = lr_f * math.sqrt(_one_minus_power(optimizer.beta_2, t)) / _one_minus_power(optimizer.beta_1, t)
    constants = (1.0 - optimizer.beta_1, 1.0 - optimizer.beta_2, optimizer.epsilon, alpha, bool(optimizer.amsgrad))
    return ("adam", p, g, s, d, shrink, constants, iterations)


def write_in_place(plan: tuple) -> None:
    """The update of a :func:`plan_in_place` plan, in place, then the step counter. Only NumPy ufuncs
    run from the first write to the last (a held signal handler or a trace function's call event
    cannot stop it half-way); a floating-point error goes wherever NumPy's error state sends it
    (``fit`` logs it meanwhile: :mod:`ember.backends.numpy.float_errors`).

    Example:
        >>> import numpy as np
        >>> from ember import optimizers
        >>> from ember.backends.numpy import optim
        >>> params, counter = [np.ones(2, "float32")], np.zeros((), "int64")
        >>> plan = optim.plan_in_place(optimizers.SGD(0.5), [np.ones(2, "float32")], params, {}, step=1, lr=0.5,
        ...                            decay=None, scratch=[None], iterations=counter)
        >>> optim.write_in_place(plan)
        >>> params[0].tolist(), int(counter)
        ([0.5, 0.5], 1)
    """
    kind, params, grads, slots, scratch, shrink, constants, iterations = plan
    if kind == "adam":
        w1, w2, eps, alpha, amsgrad = constants
        m, v = slots[0], slots[1]
        v_hat = slots[2] if amsgrad else None
        for k in range(len(params)):
            p, g, s, momentum, velocity = params[k], grads[k], scratch[k], m[k], v[k]
            if shrink[k] is not None:  # decoupled weight decay: p - p * (lr * rate)
                _multiply(p, shrink[k], out=s)
                _subtract(p, s, out=p)
            _subtract(g, momentum, out=s)  # m + (g - m) * (1 - beta_1)
            _multiply(s, w1, out=s)
            _add(momentum, s, out=momentum)
            _multiply(g, g, out=s)  # v + (g * g - v) * (1 - beta_2)
            _subtract(s, velocity, out=s)
            _multiply(s, w2, out=s)
            _add(velocity, s, out=velocity)
            if v_hat is not None:
                velocity = _maximum(v_hat[k], velocity, out=v_hat[k])
            _sqrt(velocity, out=s)  # p - alpha * m / (sqrt(v) + epsilon)
            _add(s, eps, out=s)
            _divide(momentum, s, out=s)
            _multiply(s, alpha, out=s)
            _subtract(p, s, out=p)
    else:
        lr, momentum_rate, nesterov = constants
        for k in range(len(params)):
            p, g, s = params[k], grads[k], scratch[k]
            if shrink[k] is not None:
                _multiply(p, shrink[k], out=s)
                _subtract(p, s, out=p)
            if momentum_rate == 0.0:  # p - g * lr
                _multiply(g, lr, out=s)
                _subtract(p, s, out=p)
                continue
            velocity = slots[0][k]  # v * momentum - g * lr
            _multiply(g, lr, out=s)
            _multiply(velocity, momentum_rate, out=velocity)
            _subtract(velocity, s, out=velocity)
            if nesterov:  # p + v * momentum - g * lr
                _multiply(velocity, momentum_rate, out=s)
                _add(p, s, out=p)
                _multiply(g, lr, out=s)
                _subtract(p, s, out=p)
            else:
                _add(p, velocity, out=p)
    _add(iterations, 1, out=iterations)
