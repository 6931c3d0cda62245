"""Fused optimizer kernels for the NumPy backend: ``SGD`` and ``Adam``/``AdamW`` out of place.

The math of every optimizer is written once, in :mod:`ember.training.optimizers`
(``update_variable``, op by op). For the optimizers ``fit`` uses most, this module runs the same
formulas as NumPy ``out=`` ufuncs over each parameter: the new params and slots are computed
from the current ones straight into arrays the caller provides (``fit``'s spare arrays, see
:mod:`ember.training.step_buffers`), with no temporaries beyond one scratch array per parameter.
:meth:`Optimizer.apply_gradients_into <ember.optimizers.Optimizer.apply_gradients_into>`
dispatches here; the tests compare these kernels with the generic path.

NumPy has no in-place kernels (:func:`supports` is False): ``apply_gradients_inplace`` takes
the generic path.

Example:
    >>> import numpy as np
    >>> from ember import optimizers
    >>> from ember.backends.numpy import optim
    >>> params, new_params = [np.ones(2, "float32")], [np.zeros(2, "float32")]
    >>> optim.apply_gradients_into(optimizers.SGD(0.5), [np.ones(2, "float32")], params, {}, new_params, {},
    ...                            step=1, lr=0.5)
    >>> params[0].tolist(), new_params[0].tolist()
    ([1.0, 1.0], [0.5, 0.5])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

# The optimizers name their kernels (``Optimizer.fused_kernel``): this module imports none of them.
_OUT_OF_PLACE = ("sgd", "adam")


def _kernel_name(optimizer: Any) -> str | None:
    return getattr(optimizer, "kernel_name", None)


def supports(optimizer: Any) -> bool:
    """Whether an in-place kernel exists for ``optimizer`` here: never on NumPy (see the module docstring)."""
    return False


def written_slots(optimizer: Any, params: list) -> tuple[str, ...] | None:
    """The slots :func:`apply_gradients_into` writes, or None when it has no kernel for these.

    Kernels exist for ``SGD``, ``Adam`` and ``AdamW`` (not their subclasses) without gradient
    clipping or loss scaling, on float32/float64 arrays.

    Example:
        >>> import numpy as np
        >>> from ember import optimizers
        >>> from ember.backends.numpy import optim
        >>> optim.written_slots(optimizers.Adam(), [np.ones(2)])
        ('momentum', 'velocity')
        >>> optim.written_slots(optimizers.Adam(clipnorm=1.0), [np.ones(2)]) is None
        True
    """
    name = _kernel_name(optimizer)
    if (name not in _OUT_OF_PLACE or optimizer.clipnorm or optimizer.clipvalue or optimizer.global_clipnorm
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


def _sgd_into(opt: Any, g: np.ndarray, source: np.ndarray, p: np.ndarray, slots: list, new_slots: list,
              lr: float, t: float) -> None:
    scaled = g * lr
    if opt.momentum == 0.0:
        np.subtract(source, scaled, out=p)
        return
    velocity = np.multiply(slots[0], opt.momentum, out=new_slots[0])
    velocity -= scaled
    if opt.nesterov:
        np.add(source, velocity * opt.momentum, out=p)
        p -= scaled
    else:
        np.add(source, velocity, out=p)


def _adam_into(opt: Any, g: np.ndarray, source: np.ndarray, p: np.ndarray, slots: list, new_slots: list,
               lr: float, t: float) -> None:
    m_old, v_old = slots[0], slots[1]
    m, v = new_slots[0], new_slots[1]
    np.subtract(g, m_old, out=m)
    m *= 1.0 - opt.beta_1
    m += m_old
    np.multiply(g, g, out=v)
    v -= v_old
    v *= 1.0 - opt.beta_2
    v += v_old
    if opt.amsgrad:
        v = np.maximum(slots[2], v, out=new_slots[2])
    alpha = lr * math.sqrt(_one_minus_power(opt.beta_2, t)) / _one_minus_power(opt.beta_1, t)
    scratch = np.sqrt(v)
    scratch += opt.epsilon
    np.divide(m, scratch, out=scratch)
    scratch *= alpha
    np.subtract(source, scratch, out=p)


# Looked up by Optimizer.kernel_name (None: the optimizer has no kernel).
_KERNELS_INTO: dict[str | None, Callable] = {"sgd": _sgd_into, "adam": _adam_into}


def apply_gradients_into(optimizer: Any, grads: list, params: list, slots: dict, new_params: list, new_slots: dict,
                         step: Any, lr: Any, decay: list | None = None) -> None:
    """One optimizer step out of place: reads ``params``/``slots``, writes ``new_params``/``new_slots``.

    The formulas of the generic path (``update_variable``); each array's new value is written
    whole into a distinct array, so ``params`` and ``slots`` are never modified. A parameter
    whose gradient is None is not written (nor are its slots).

    Args:
        optimizer: an Ember optimizer for which :func:`written_slots` is not None.
        grads: one gradient (or None) per parameter.
        params: the parameters, read only.
        slots: ``{slot_name: list aligned with params}``, read only.
        new_params: arrays (distinct from ``params``) that receive the new parameters.
        new_slots: like ``slots``; its :func:`written_slots` receive the new slot values.
        step: the 1-based step number (int, float or 0-d array).
        lr: the learning rate for this step (float or 0-d array).
        decay: per-parameter flags for weight decay (default: all, when ``weight_decay`` is set).

    Raises:
        TypeError: no out-of-place kernel for this optimizer (or these arrays).
        ValueError: every gradient is None.
    """
    names = written_slots(optimizer, params)
    if names is None:
        raise TypeError(f"apply_gradients_into: no out-of-place NumPy kernel for {type(optimizer).__name__} on "
                        f"these arrays; use apply_gradients")
    if all([g is None for g in grads]):  # a list: a generator left suspended is closed later, losing an interrupt
        raise ValueError(f"{type(optimizer).__name__}: no gradients provided for any variable (every grad is None)")
    kernel = _KERNELS_INTO[_kernel_name(optimizer)]
    lr, t = float(np.asarray(lr)), float(np.asarray(step))
    rate = optimizer.weight_decay
    old_slots, fresh_slots = [slots[name] for name in names], [new_slots[name] for name in names]
    for i, (g, old) in enumerate(zip(grads, params)):
        if g is None:
            continue
        g = _plain(g)
        if g.dtype != old.dtype:
            g = g.astype(old.dtype)
        p = new_params[i]
        source = old  # the param's current value: the old array until p is written
        if rate is not None and (decay is None or decay[i]):
            np.multiply(old, lr * rate, out=p)
            np.subtract(old, p, out=p)
            source = p
        kernel(optimizer, g, source, p, [values[i] for values in old_slots], [values[i] for values in fresh_slots],
               lr, t)
