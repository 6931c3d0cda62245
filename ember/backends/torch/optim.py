"""Fused in-place optimizer steps for the torch backend (``torch._foreach_*`` kernels).

:func:`apply_gradients_inplace` implements the same math as the pure optimizers in
:mod:`ember.training.optimizers` (clipping, decoupled weight decay, the update) on lists
of tensors, updating params, slots and optimizer-wide scalars in place with a handful of
multi-tensor kernel launches per step instead of a dozen ops per parameter. It is used
by :meth:`Optimizer.apply_gradients_inplace` when torch is the active backend, on arrays
the trainer owns (it copies params once at the start of ``fit``).

Scalars (learning rate, step) may be Python numbers or 0-d tensors. Tensors on the CPU
are read as floats (no device sync); tensors on an accelerator stay tensors, and the
per-step factors are computed on the device, so a CUDA step never syncs the host.

Example:
    >>> import ember
    >>> from ember import ops, optimizers
    >>> from ember.backends.torch import optim
    >>> ember.set_backend("torch")
    >>> opt = optimizers.SGD(learning_rate=0.5)
    >>> params = [ops.ones((2,))]
    >>> optim.apply_gradients_inplace(opt, [ops.ones((2,))], params, {}, step=1, lr=0.5)
    >>> params[0].tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ember.backends.torch import _base

Scalar = Any  # a Python float or a 0-d tensor on the parameters' device
Tensors = list[torch.Tensor] | tuple[torch.Tensor, ...]  # a list, or the tuple a torch._foreach_* op returns


def _scalar(value: Any) -> Scalar:
    if isinstance(value, torch.Tensor):
        if _base.host_reads_free(value.device):  # Python floats are faster for CPU kernels
            return float(value.item())
        return value.to(torch.float32)
    return float(value)


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _sqrt(x: Scalar) -> Scalar:
    return torch.sqrt(x) if _is_tensor(x) else math.sqrt(x)


def _one_minus_power(base: float, t: Scalar) -> Scalar:
    """``1 - base ** t`` as ``-expm1(t * log(base))`` (the generic path's formula)."""
    if base == 0.0:
        return torch.ones_like(t) if _is_tensor(t) else 1.0
    if base == 1.0:
        return torch.zeros_like(t) if _is_tensor(t) else 0.0
    if base < 0.0:
        return 1.0 - base ** t
    return -torch.expm1(t * math.log(base)) if _is_tensor(t) else -math.expm1(t * math.log(base))


def _power(base: float, t: Scalar) -> Scalar:
    if base <= 0.0:
        return base ** t
    return torch.exp(t * math.log(base)) if _is_tensor(t) else math.exp(t * math.log(base))


def _add_scaled_(targets: Tensors, tensors: Tensors, scale: Scalar) -> None:
    """``targets += scale * tensors``."""
    if _is_tensor(scale):
        torch._foreach_add_(targets, torch._foreach_mul(tensors, scale))
    else:
        torch._foreach_add_(targets, tensors, alpha=scale)


def _addcdiv_(targets: Tensors, numerators: Tensors, denominators: Tensors, scale: Scalar) -> None:
    """``targets += scale * numerators / denominators``."""
    if _is_tensor(scale):
        quotient = torch._foreach_div(numerators, denominators)
        torch._foreach_mul_(quotient, scale)
        torch._foreach_add_(targets, quotient)
    else:
        torch._foreach_addcdiv_(targets, numerators, denominators, value=scale)


def _ema_(averages: Tensors, values: Tensors, beta: float) -> None:
    """``averages += (values - averages) * (1 - beta)``."""
    torch._foreach_lerp_(averages, values, 1.0 - beta)


def _decay_(averages: Tensors, values: Tensors, rho: float) -> None:
    """``averages = rho * averages + (1 - rho) * values**2``."""
    torch._foreach_mul_(averages, rho)
    torch._foreach_addcmul_(averages, values, values, value=1.0 - rho)


_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _norms(tensors: Tensors) -> Tensors:
    """L2 norm of each tensor (float16/bfloat16 accumulated in float32, as the generic path)."""
    if any([t.dtype in _LOW_PRECISION for t in tensors]):
        return [torch.linalg.vector_norm(t, dtype=torch.float32 if t.dtype in _LOW_PRECISION else None)
                for t in tensors]
    return list(torch._foreach_norm(tensors))


def _clip(optimizer: Any, grads: Tensors) -> Tensors:
    if optimizer.loss_scale_factor is not None:
        grads = torch._foreach_div(grads, optimizer.loss_scale_factor)
    if optimizer.clipnorm:
        c = optimizer.clipnorm
        factors = [c / torch.clamp(n, min=c) for n in _norms(grads)]
        return torch._foreach_mul(grads, [f.to(g.dtype) for f, g in zip(factors, grads)])
    if optimizer.global_clipnorm:
        c = optimizer.global_clipnorm
        norms = _norms(grads)
        norm = torch.linalg.vector_norm(torch.stack([n.to(norms[0].dtype) for n in norms]))
        scale = c / torch.clamp(norm, min=c) + (norm - norm)
        return torch._foreach_mul(grads, [scale.to(g.dtype) for g in grads])
    if optimizer.clipvalue:
        v = optimizer.clipvalue
        clipped = torch._foreach_clamp_min(grads, -v)
        torch._foreach_clamp_max_(clipped, v)
        return clipped
    return grads


# --------------------------------------------------------------------------- kernels
# Each kernel: (optimizer, grads, params, slots: {name: list}, lr, t, shared: {name: tensor}) -> None.


def _sgd(opt, grads, params, slots, lr, t, shared):
    if opt.momentum == 0.0:
        _add_scaled_(params, grads, -lr)
        return
    velocity = slots["momentum"]
    torch._foreach_mul_(velocity, opt.momentum)
    _add_scaled_(velocity, grads, -lr)
    if opt.nesterov:
        _add_scaled_(params, velocity, opt.momentum)
        _add_scaled_(params, grads, -lr)
    else:
        torch._foreach_add_(params, velocity)


def _adam(opt, grads, params, slots, lr, t, shared):
    m, v = slots["momentum"], slots["velocity"]
    _ema_(m, grads, opt.beta_1)
    _decay_(v, grads, opt.beta_2)
    if opt.amsgrad:
        torch._foreach_maximum_(slots["velocity_hat"], v)
        v = slots["velocity_hat"]
    alpha = lr * _sqrt(_one_minus_power(opt.beta_2, t)) / _one_minus_power(opt.beta_1, t)
    denominator = torch._foreach_sqrt(v)
    torch._foreach_add_(denominator, opt.epsilon)
    _addcdiv_(params, m, denominator, -alpha)


def _adamax(opt, grads, params, slots, lr, t, shared):
    m, u = slots["momentum"], slots["norm"]
    _ema_(m, grads, opt.beta_1)
    torch._foreach_mul_(u, opt.beta_2)
    torch._foreach_maximum_(u, torch._foreach_abs(grads))
    denominator = torch._foreach_add(u, opt.epsilon)
    _addcdiv_(params, m, denominator, -lr / _one_minus_power(opt.beta_1, t))


def _moments_and_denominator(opt, grads, slots, t):
    """Nadam's and Lamb's first step: the moments updated in place; ``(momentum, sqrt(v / (1 - beta_2^t)) + eps)``."""
    m, v = slots["momentum"], slots["velocity"]
    _ema_(m, grads, opt.beta_1)
    _decay_(v, grads, opt.beta_2)
    denominator = torch._foreach_sqrt(v)
    torch._foreach_mul_(denominator, 1.0 / _sqrt(_one_minus_power(opt.beta_2, t)))
    torch._foreach_add_(denominator, opt.epsilon)
    return m, denominator


def _nadam(opt, grads, params, slots, lr, t, shared):
    def u_at(step):
        return opt.beta_1 * (1.0 - 0.5 * _power(0.96, step))

    u_product_tensor = shared["u_product"]
    u_t, u_next = u_at(t), u_at(t + 1.0)
    u_product = _scalar(u_product_tensor) * u_t
    if _is_tensor(u_product):
        u_product_tensor.copy_(u_product)
    else:
        u_product_tensor.fill_(u_product)
    m, denominator = _moments_and_denominator(opt, grads, slots, t)
    _addcdiv_(params, grads, denominator, -lr * (1.0 - u_t) / (1.0 - u_product))
    _addcdiv_(params, m, denominator, -lr * u_next / (1.0 - u_product * u_next))


def _lamb(opt, grads, params, slots, lr, t, shared):
    m, denominator = _moments_and_denominator(opt, grads, slots, t)
    update = torch._foreach_div(m, denominator)
    torch._foreach_mul_(update, 1.0 / _one_minus_power(opt.beta_1, t))
    w_norms, u_norms = torch._foreach_norm(params), torch._foreach_norm(update)
    ratios = [torch.where((w > 0) & (u > 0), w / torch.where(u > 0, u, 1.0), 1.0) for w, u in zip(w_norms, u_norms)]
    torch._foreach_mul_(update, ratios)
    _add_scaled_(params, update, -lr)


def _rmsprop(opt, grads, params, slots, lr, t, shared):
    velocity = slots["velocity"]
    _decay_(velocity, grads, opt.rho)
    if opt.centered:
        average = slots["average_gradient"]
        torch._foreach_lerp_(average, grads, 1.0 - opt.rho)
        denominator = torch._foreach_addcmul(velocity, average, average, value=-1.0)
        torch._foreach_add_(denominator, opt.epsilon)
    else:
        denominator = torch._foreach_add(velocity, opt.epsilon)
    torch._foreach_sqrt_(denominator)
    if opt.momentum > 0.0:
        buffer = slots["momentum"]
        torch._foreach_mul_(buffer, opt.momentum)
        _addcdiv_(buffer, grads, denominator, lr)
        torch._foreach_sub_(params, buffer)
    else:
        _addcdiv_(params, grads, denominator, -lr)


def _adagrad(opt, grads, params, slots, lr, t, shared):
    accumulator = slots["accumulator"]
    torch._foreach_addcmul_(accumulator, grads, grads)
    denominator = torch._foreach_add(accumulator, opt.epsilon)
    torch._foreach_sqrt_(denominator)
    _addcdiv_(params, grads, denominator, -lr)


def _adadelta(opt, grads, params, slots, lr, t, shared):
    g2, d2 = slots["accumulated_grad"], slots["accumulated_delta_var"]
    _decay_(g2, grads, opt.rho)
    numerator = torch._foreach_add(d2, opt.epsilon)
    torch._foreach_sqrt_(numerator)
    denominator = torch._foreach_add(g2, opt.epsilon)
    torch._foreach_sqrt_(denominator)
    delta = torch._foreach_div(numerator, denominator)
    torch._foreach_mul_(delta, grads)  # delta here is -(the Keras delta)
    _decay_(d2, delta, opt.rho)
    _add_scaled_(params, delta, -lr)


def _lion(opt, grads, params, slots, lr, t, shared):
    m = slots["momentum"]
    direction = torch._foreach_lerp(m, grads, 1.0 - opt.beta_1)
    torch._foreach_sign_(direction)
    _add_scaled_(params, direction, -lr)
    torch._foreach_lerp_(m, grads, 1.0 - opt.beta_2)


def _step_size(optimizer: Any, lr: Scalar, t: Scalar) -> Scalar:
    """The factor of the update every parameter shares this step (Adam's bias-corrected rate)."""
    if _kernel_name(optimizer) == "sgd":
        return lr
    return lr * _sqrt(_one_minus_power(optimizer.beta_2, t)) / _one_minus_power(optimizer.beta_1, t)


# The optimizers name their fused kernels (``Optimizer.fused_kernel``): this backend imports none of them.
# Looked up by Optimizer.kernel_name (None: the optimizer has no kernel): those plan_in_place writes.
_IN_PLACE_KERNELS = ("sgd", "adam")


def _kernel_name(optimizer: Any) -> str | None:
    return getattr(optimizer, "kernel_name", None)


def in_place_slots(optimizer: Any, params: list) -> tuple[str, ...] | None:
    """The slots :func:`plan_in_place`/:func:`write_in_place` update, or None when they have no kernel.

    ``SGD``, ``Adam`` and ``AdamW`` on any device: the write runs multi-tensor kernels, on the CPU
    with Python-float factors, on an accelerator with 0-d device factors (no
    host read); there the parameters must share one dtype (None otherwise).

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> from ember.backends.torch import optim
        >>> ember.set_backend("torch")
        >>> optim.in_place_slots(optimizers.SGD(momentum=0.9), [ops.ones((2,))])
        ('momentum',)
    """
    name = _kernel_name(optimizer)
    if name not in _IN_PLACE_KERNELS:
        return None
    if not _base.host_reads_free(params[0].device) and len({p.dtype for p in params}) > 1:
        return None
    if name == "sgd":
        return ("momentum",) if optimizer.momentum != 0.0 else ()
    return ("momentum", "velocity") + (("velocity_hat",) if optimizer.amsgrad else ())


_KERNELS: dict[str | None, Callable] = {"sgd": _sgd, "adam": _adam, "adamax": _adamax, "nadam": _nadam, "lamb": _lamb,
                                  "rmsprop": _rmsprop, "adagrad": _adagrad, "adadelta": _adadelta, "lion": _lion}


def supports(optimizer: Any) -> bool:
    """True when the optimizer names a fused kernel here (``kernel_name``; subclasses use the generic path)."""
    return _kernel_name(optimizer) in _KERNELS


def apply_gradients_inplace(optimizer: Any, grads: list, params: list, slots: dict, step: Any, lr: Any,
                            shared: dict | None = None, decay: list | None = None) -> None:
    """One optimizer step on lists of tensors, in place.

    Args:
        optimizer: an Ember optimizer whose type :func:`supports`.
        grads: one gradient (or None: skip that parameter) per parameter.
        params: the parameters, updated in place.
        slots: ``{slot_name: list aligned with params}``, updated in place.
        step: the 1-based step number (``iterations + 1``): int, float or 0-d tensor.
        lr: the learning rate for this step: float or 0-d tensor.
        shared: optimizer-wide 0-d tensors (Nadam's ``u_product``), updated in place.
        decay: per-parameter flags for weight decay (default: all, when ``weight_decay`` is set).

    Raises:
        TypeError: the optimizer has no fused kernel.
        ValueError: every gradient is None.
    """
    kernel = _KERNELS.get(_kernel_name(optimizer))
    if kernel is None:
        raise TypeError(f"apply_gradients_inplace: no fused torch kernel for {type(optimizer).__name__}; "
                        "use optimizer.apply_gradients (the generic path)")
    active = [i for i, g in enumerate(grads) if g is not None]
    if not active:
        raise ValueError(f"{type(optimizer).__name__}: no gradients provided for any variable (every grad is None)")
    with torch.no_grad():
        p = [params[i] for i in active]
        g = _clip(optimizer, [grads[i] if grads[i].dtype == params[i].dtype else grads[i].to(params[i].dtype)
                              for i in active])
        s = {name: [values[i] for i in active] for name, values in slots.items()}
        lr_s, t = _scalar(lr), _scalar(step)
        if optimizer.weight_decay is not None:
            decayed = [p[k] for k, i in enumerate(active) if decay is None or decay[i]]
            if decayed:
                _add_scaled_(decayed, decayed, -lr_s * optimizer.weight_decay)
        kernel(optimizer, g, p, s, lr_s, t, shared or {})


# ------------------------------------------------------------- in place, all or nothing
# ``fit``'s fastest atomic step on the CPU: plan_in_place computes (and allocates) everything the
# update needs while nothing is written yet; write_in_place then updates params, slots and the
# step counter in place with C kernels only (no Python function is entered, nothing is allocated),
# under the caller's held signals (ember.backends._held_signals), so once begun it finishes.


def plan_in_place(optimizer: Any, grads: list, params: list, slots: dict, step: Any, lr: Any, decay: list | None,
                  scratch: list, iterations: Any) -> tuple:
    """Everything :func:`write_in_place` needs, computed first (nothing is written here).

    Args:
        optimizer: an Ember optimizer for which :func:`in_place_slots` is not None.
        grads, params, slots, step, lr, decay: as :func:`apply_gradients_inplace`.
        scratch: one spare tensor per parameter (its values are overwritten), or None entries (Adam
            then allocates them for this step; ``fit`` passes the gradients it owns where they can
            serve, :func:`reusable_gradients`); ``SGD`` needs none.
        iterations: the optimizer's 0-d step counter, incremented in place by the write.

    Raises:
        TypeError: no kernel for this optimizer on these tensors.
        ValueError: every gradient is None.
    """
    names = in_place_slots(optimizer, params) if params else None
    if names is None:
        raise TypeError(f"plan_in_place: no torch kernel for {type(optimizer).__name__} on these tensors; "
                        f"use apply_gradients_inplace")
    active = [i for i, g in enumerate(grads) if g is not None]
    if not active:
        raise ValueError(f"{type(optimizer).__name__}: no gradients provided for any variable (every grad is None)")
    with torch.no_grad():
        g = _clip(optimizer, [grads[i] if grads[i].dtype == params[i].dtype else grads[i].to(params[i].dtype)
                              for i in active])
    lr_s, t = _scalar(lr), _scalar(step)
    p = [params[i] for i in active]
    s = [[slots[name][i] for i in active] for name in names]
    adam = _kernel_name(optimizer) != "sgd"
    d = _denominator_space([scratch[i] for i in active], s[1]) if adam else None
    if not _base.host_reads_free(p[0].device):
        return _plan_on_accelerator(optimizer, g, p, s, d, lr_s, t, [decay is None or decay[i] for i in active],
                                    iterations)
    rate = optimizer.weight_decay
    decaying = [p[k] for k, i in enumerate(active) if decay is None or decay[i]] if rate is not None else []
    shrink = (decaying, -lr_s * rate if decaying else 0.0)
    constants: tuple
    if _kernel_name(optimizer) == "sgd":
        constants = (-lr_s, optimizer.momentum, bool(optimizer.nesterov))
        return ("sgd", p, g, s, None, shrink, constants, iterations)
    constants = (1.0 - optimizer.beta_1, optimizer.beta_2, 1.0 - optimizer.beta_2, optimizer.epsilon,
                 _step_size(optimizer, lr_s, t), bool(optimizer.amsgrad))
    return ("adam", p, g, s, d, shrink, constants, iterations)


def reusable_gradients(grads: list, second_moments: list) -> list:
    """For each parameter, its gradient where that gradient can hold the Adam denominator, else None.

    For the caller that owns the gradients and drops them after the write (``fit``'s step): the
    write reads every gradient (the moments' updates) before it writes any denominator, so such a
    gradient is free space by then. It must be a plain tensor that does not require grad, with the
    second moment's shape, dtype and strides (so as dense as it), and share no memory with another chosen one
    (autograd hands one tensor to both inputs of an add). Then fit keeps no param-sized spare
    buffer through the backward pass.

    Example:
        >>> import torch
        >>> v = [torch.zeros(3), torch.zeros(2)]
        >>> g = torch.ones(3)
        >>> [x is g for x in reusable_gradients([g, g[:2]], v)]  # the second shares the first's memory
        [True, False]
    """
    space, taken = [], set()
    for grad, moment in zip(grads, second_moments):
        reusable = None
        if type(grad) is torch.Tensor and not grad.requires_grad:
            memory = grad.untyped_storage().data_ptr()
            # The moment is dense (made like its param), so the same shape and strides make the gradient dense.
            if (memory not in taken and grad.shape == moment.shape and grad.dtype == moment.dtype
                    and grad.stride() == moment.stride()):
                taken.add(memory)
                reusable = grad
        space.append(reusable)
    return space


def _denominator_space(scratch: list, second_moments: list) -> list:
    """The spare tensor given for each Adam denominator, or a new one where none was given."""
    return [torch.empty_like(moment) if spare is None else spare for spare, moment in zip(scratch, second_moments)]


def _plan_on_accelerator(optimizer: Any, grads: Tensors, params: list, slots: list, scratch: list | None, lr: Scalar,
                         t: Scalar, decayed: list, iterations: Any) -> tuple:
    """:func:`plan_in_place` for tensors on an accelerator: every factor a 0-d tensor on the device,
    the terms that read only the old values (decay, scaled gradients) computed here; the write is
    multi-tensor kernels alone (:func:`write_in_place`)."""
    with torch.no_grad():
        dtype, device = params[0].dtype, params[0].device
        if not _is_tensor(lr):
            lr = torch.tensor(lr, dtype=torch.float32, device=device)
        rate = optimizer.weight_decay
        decaying = [param for param, flag in zip(params, decayed) if flag] if rate is not None else []
        decay_terms = torch._foreach_mul(decaying, (-lr * rate).to(dtype)) if decaying else []
        if _kernel_name(optimizer) == "sgd":
            scaled = torch._foreach_mul(grads, (-lr).to(dtype))
            constants: tuple = (1.0, optimizer.momentum, bool(optimizer.nesterov))  # grads already times -lr
            return ("sgd_foreach", params, scaled, slots, None, (decaying, decay_terms), constants, iterations)
        if _is_tensor(t):  # the step number on the device: its factors are computed there
            negative_step = (-_step_size(optimizer, lr, t)).to(dtype)
        else:  # known on the host (fit's StepCounter): one kernel
            negative_step = (lr * -_step_size(optimizer, 1.0, t)).to(dtype)
        constants = (1.0 - optimizer.beta_1, optimizer.beta_2, 1.0 - optimizer.beta_2, optimizer.epsilon,
                     negative_step, bool(optimizer.amsgrad))
        return ("adam_foreach", params, grads, slots, scratch, (decaying, decay_terms), constants, iterations)


def write_in_place(plan: tuple) -> None:
    """The update of a :func:`plan_in_place` plan, in place: the multi-tensor kernels of
    :func:`apply_gradients_inplace` (on the CPU its numbers exactly), then the step counter.

    One function with no calls into Python: only C functions run from the first write to the
    last, so a held signal handler or a trace function's call event cannot stop it half-way (the
    host and accelerator plans therefore share this body rather than helpers). Call it with
    gradients disabled. An accelerator plan (``*_foreach``) carries its decay terms precomputed, its
    factors as 0-d device tensors and SGD's gradients already scaled by ``-lr``.
    """
    kind, params, grads, slots, scratch, (decaying, decay), constants, iterations = plan
    on_device = kind.endswith("_foreach")
    if decaying:
        if on_device:
            torch._foreach_add_(decaying, decay)  # the terms -lr * rate * p, computed by the plan
        else:
            torch._foreach_add_(decaying, decaying, alpha=decay)
    if kind.startswith("adam"):
        w1, b2, w2, eps, step, amsgrad = constants
        m, v = slots[0], slots[1]
        torch._foreach_lerp_(m, grads, w1)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, value=w2)
        if amsgrad:
            torch._foreach_maximum_(slots[2], v)
            v = slots[2]
        torch._foreach_copy_(scratch, v)  # the denominators in the plan's spare tensors (no allocation)
        torch._foreach_sqrt_(scratch)
        torch._foreach_add_(scratch, eps)
        if on_device:  # step: -step_size as a device tensor; p - s * m / d  as  p + m / (d / -s)
            torch._foreach_div_(scratch, step)
            torch._foreach_addcdiv_(params, m, scratch)
        else:
            torch._foreach_addcdiv_(params, m, scratch, value=-step)
    else:
        alpha, momentum, nesterov = constants  # alpha: -lr (1.0 for gradients already scaled)
        if momentum == 0.0:
            torch._foreach_add_(params, grads, alpha=alpha)
        else:
            velocity = slots[0]
            torch._foreach_mul_(velocity, momentum)
            torch._foreach_add_(velocity, grads, alpha=alpha)
            if nesterov:
                torch._foreach_add_(params, velocity, alpha=momentum)
                torch._foreach_add_(params, grads, alpha=alpha)
            else:
                torch._foreach_add_(params, velocity)
    iterations.add_(1)
