"""NumPy float64 references of the Keras 3 optimizer and schedule formulas, written out here.

Independent of Ember's code: each function is the formula from Keras 3's documentation and
source (keras/src/optimizers/*.py, keras/src/optimizers/schedules/learning_rate_schedule.py),
evaluated in float64 with plain NumPy, one parameter at a time.
"""

from __future__ import annotations

import math

import numpy as np


def clip(grads, clipnorm=None, clipvalue=None, global_clipnorm=None):
    """Keras's ``_clip_gradients`` on a list of float64 arrays (None entries kept)."""
    if clipnorm:
        out = []
        for g in grads:
            if g is None:
                out.append(None)
                continue
            norm = np.sqrt(np.sum(g * g))
            out.append(g * clipnorm / max(norm, clipnorm))
        return out
    if global_clipnorm:
        norm = np.sqrt(sum(np.sum(g * g) for g in grads if g is not None))
        scale = global_clipnorm * min(1.0 / norm if norm else np.inf, 1.0 / global_clipnorm)
        return [None if g is None else g * scale for g in grads]
    if clipvalue:
        return [None if g is None else np.clip(g, -clipvalue, clipvalue) for g in grads]
    return list(grads)


def _sgd(h, p, g, s, t, lr, shared):
    momentum = h.get("momentum", 0.0)
    if momentum == 0.0:
        return p - lr * g
    s["momentum"] = momentum * s["momentum"] - lr * g
    if h.get("nesterov", False):
        return p + momentum * s["momentum"] - lr * g
    return p + s["momentum"]


def _adam(h, p, g, s, t, lr, shared):
    b1, b2, eps = h.get("beta_1", 0.9), h.get("beta_2", 0.999), h.get("epsilon", 1e-7)
    s["momentum"] = s["momentum"] + (g - s["momentum"]) * (1 - b1)
    s["velocity"] = s["velocity"] + (g * g - s["velocity"]) * (1 - b2)
    v = s["velocity"]
    if h.get("amsgrad", False):
        s["velocity_hat"] = np.maximum(s["velocity_hat"], v)
        v = s["velocity_hat"]
    alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
    return p - s["momentum"] * alpha / (np.sqrt(v) + eps)


def _adamax(h, p, g, s, t, lr, shared):
    b1, b2, eps = h.get("beta_1", 0.9), h.get("beta_2", 0.999), h.get("epsilon", 1e-7)
    s["momentum"] = s["momentum"] + (g - s["momentum"]) * (1 - b1)
    s["norm"] = np.maximum(b2 * s["norm"], np.abs(g))
    return p - lr * s["momentum"] / ((1 - b1**t) * (s["norm"] + eps))


def _nadam(h, p, g, s, t, lr, shared):
    b1, b2, eps = h.get("beta_1", 0.9), h.get("beta_2", 0.999), h.get("epsilon", 1e-7)
    u_t = b1 * (1 - 0.5 * 0.96**t)
    u_next = b1 * (1 - 0.5 * 0.96 ** (t + 1))
    u_product = shared["u_product"]  # already includes u_t
    s["momentum"] = s["momentum"] + (g - s["momentum"]) * (1 - b1)
    s["velocity"] = s["velocity"] + (g * g - s["velocity"]) * (1 - b2)
    m_hat = u_next * s["momentum"] / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product)
    v_hat = s["velocity"] / (1 - b2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps)


def _lamb(h, p, g, s, t, lr, shared):
    b1, b2, eps = h.get("beta_1", 0.9), h.get("beta_2", 0.999), h.get("epsilon", 1e-7)
    s["momentum"] = s["momentum"] + (g - s["momentum"]) * (1 - b1)
    s["velocity"] = s["velocity"] + (g * g - s["velocity"]) * (1 - b2)
    update = (s["momentum"] / (1 - b1**t)) / (np.sqrt(s["velocity"] / (1 - b2**t)) + eps)
    w_norm, u_norm = np.linalg.norm(p), np.linalg.norm(update)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return p - ratio * lr * update


def _rmsprop(h, p, g, s, t, lr, shared):
    rho, momentum, eps = h.get("rho", 0.9), h.get("momentum", 0.0), h.get("epsilon", 1e-7)
    s["velocity"] = rho * s["velocity"] + (1 - rho) * g * g
    if h.get("centered", False):
        s["average_gradient"] = rho * s["average_gradient"] + (1 - rho) * g
        denominator = s["velocity"] - s["average_gradient"] ** 2 + eps
    else:
        denominator = s["velocity"] + eps
    increment = lr * g / np.sqrt(denominator)
    if momentum > 0:
        s["momentum"] = momentum * s["momentum"] + increment
        return p - s["momentum"]
    return p - increment


def _adagrad(h, p, g, s, t, lr, shared):
    s["accumulator"] = s["accumulator"] + g * g
    return p - lr * g / np.sqrt(s["accumulator"] + h.get("epsilon", 1e-7))


def _adadelta(h, p, g, s, t, lr, shared):
    rho, eps = h.get("rho", 0.95), h.get("epsilon", 1e-7)
    s["accumulated_grad"] = rho * s["accumulated_grad"] + (1 - rho) * g * g
    delta = -np.sqrt(s["accumulated_delta_var"] + eps) * g / np.sqrt(s["accumulated_grad"] + eps)
    s["accumulated_delta_var"] = rho * s["accumulated_delta_var"] + (1 - rho) * delta * delta
    return p + lr * delta


def _lion(h, p, g, s, t, lr, shared):
    b1, b2 = h.get("beta_1", 0.9), h.get("beta_2", 0.99)
    new_p = p - lr * np.sign(b1 * s["momentum"] + (1 - b1) * g)
    s["momentum"] = b2 * s["momentum"] + (1 - b2) * g
    return new_p


UPDATES = {"SGD": _sgd, "Adam": _adam, "AdamW": _adam, "Adamax": _adamax, "Nadam": _nadam, "Lamb": _lamb,
           "RMSprop": _rmsprop, "Adagrad": _adagrad, "Adadelta": _adadelta, "Lion": _lion}
SLOTS = {"SGD": ("momentum",), "Adam": ("momentum", "velocity", "velocity_hat"),
         "AdamW": ("momentum", "velocity", "velocity_hat"), "Adamax": ("momentum", "norm"),
         "Nadam": ("momentum", "velocity"), "Lamb": ("momentum", "velocity"),
         "RMSprop": ("velocity", "momentum", "average_gradient"), "Adagrad": ("accumulator",),
         "Adadelta": ("accumulated_grad", "accumulated_delta_var"), "Lion": ("momentum",)}


def run(kind, hyper, params, grad_steps, lr_at=None, clip_args=None, weight_decay=None):
    """Apply ``grad_steps`` (lists of arrays or None, aligned with ``params``) Keras-style in float64.

    ``lr_at(iterations)`` gives the learning rate (default: ``hyper["learning_rate"]``).
    Returns the list of final params.
    """
    params = [np.asarray(p, dtype=np.float64) for p in params]
    initial = hyper.get("initial_accumulator_value", 0.1) if kind == "Adagrad" else 0.0
    slots = [{name: np.full_like(p, initial) for name in SLOTS[kind]} for p in params]
    shared = {"u_product": 1.0}
    for iterations, grads in enumerate(grad_steps):
        t = iterations + 1
        lr = lr_at(iterations) if lr_at is not None else hyper.get("learning_rate", 0.001)
        grads = [None if g is None else np.asarray(g, dtype=np.float64) for g in grads]
        grads = clip(grads, **(clip_args or {}))
        if kind == "Nadam":
            shared["u_product"] *= hyper.get("beta_1", 0.9) * (1 - 0.5 * 0.96**t)
        for i, g in enumerate(grads):
            if g is None:
                continue
            if weight_decay is not None:
                params[i] = params[i] - params[i] * weight_decay * lr
            params[i] = UPDATES[kind](hyper, params[i], g, slots[i], t, lr, shared)
    return params


# --------------------------------------------------------------------------- schedules


def exponential_decay(step, initial_learning_rate, decay_steps, decay_rate, staircase=False):
    p = step / decay_steps
    return initial_learning_rate * decay_rate ** (math.floor(p) if staircase else p)


def piecewise_constant(step, boundaries, values):
    for boundary, value in zip(boundaries, values):
        if step <= boundary:
            return value
    return values[-1]


def polynomial_decay(step, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    if cycle:
        decay_steps = decay_steps * (1.0 if step == 0 else math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (initial_learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate


def inverse_time_decay(step, initial_learning_rate, decay_steps, decay_rate, staircase=False):
    p = step / decay_steps
    return initial_learning_rate / (1 + decay_rate * (math.floor(p) if staircase else p))


def cosine_decay(step, initial_learning_rate, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
    def decay(s, start):
        s = min(s, decay_steps)
        return start * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)

    if warmup_target is None:
        return decay(step, initial_learning_rate)
    step = min(step, decay_steps + warmup_steps)
    if step < warmup_steps:
        return (warmup_target - initial_learning_rate) * step / warmup_steps + initial_learning_rate
    return decay(step - warmup_steps, warmup_target)


def cosine_decay_restarts(step, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0):
    """SGDR, by walking the periods (not by Keras's closed form, so it checks that too)."""
    period, start, restart = float(first_decay_steps), 0.0, 0
    while step >= start + period:
        start += period
        period *= t_mul
        restart += 1
    fraction = (step - start) / period
    return initial_learning_rate * ((1 - alpha) * m_mul**restart * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)
