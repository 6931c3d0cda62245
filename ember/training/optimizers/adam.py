"""The Adam family: ``Adam`` (and AMSGrad), ``AdamW``, ``Adamax``, ``Nadam``, ``Lamb`` (Keras 3 formulas).

Bias corrections ``1 - beta ** t`` are computed as ``-expm1(t * log(beta))`` (see
:func:`~ember.training.optimizers._math.one_minus_power`), which is the same formula
evaluated more accurately in float32 than Keras's direct ``1 - beta ** t``.
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.optimizers._math import check_number, one_minus_power, power
from ember.training.optimizers.base import Optimizer


def _moments(owner: str, beta_1: float, beta_2: float, epsilon: float) -> tuple[float, float, float]:
    return (check_number(owner, "beta_1", beta_1, 0.0, 1.0), check_number(owner, "beta_2", beta_2, 0.0, 1.0),
            check_number(owner, "epsilon", epsilon, 0.0))


def _ema(ops: Any, average: Any, value: Any, beta: float) -> Any:
    """``average + (value - average) * (1 - beta)`` (Keras's moving-average update)."""
    return ops.add(average, ops.multiply(ops.subtract(value, average), 1.0 - beta))


@register_serializable("ember")
class Adam(Optimizer):
    """Adam (Kingma & Ba), Keras 3 formulation.

    With ``t`` the 1-based step::

        m = m + (grad - m) * (1 - beta_1)
        v = v + (grad**2 - v) * (1 - beta_2)
        v_hat = max(v_hat, v) if amsgrad else v
        param -= lr * sqrt(1 - beta_2**t) / (1 - beta_1**t) * m / (sqrt(v_hat) + epsilon)

    ``epsilon`` is added to ``sqrt(v)`` *before* the bias correction is applied (the paper's
    "epsilon hat"); ``torch.optim.Adam`` adds it after, so the two agree exactly only for
    ``epsilon = 0`` (torch's ``eps`` equals Keras's ``epsilon / sqrt(1 - beta_2**t)``).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: decay of the first moment. Defaults to 0.9.
        beta_2: decay of the second moment. Defaults to 0.999.
        epsilon: added to ``sqrt(v)``. Defaults to 1e-7.
        amsgrad: use the AMSGrad maximum of past second moments. Defaults to False.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adam(learning_rate=0.1)
        >>> params = {"w": ops.ones((2,))}
        >>> params, state = opt.apply_gradients({"w": ops.ones((2,))}, opt.init(params), params)
        >>> [round(x, 4) for x in ops.to_numpy(params["w"]).tolist()]
        [0.9, 0.9]
    """

    default_name = "adam"
    fused_kernel = "adam"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments(type(self).__name__, beta_1, beta_2, epsilon)
        if not isinstance(amsgrad, bool):
            raise TypeError(f"{type(self).__name__}: `amsgrad` must be a bool, received amsgrad={amsgrad!r}")
        self.amsgrad = amsgrad

    def slot_initializers(self) -> dict[str, float]:
        slots = {"momentum": 0.0, "velocity": 0.0}
        if self.amsgrad:
            slots["velocity_hat"] = 0.0
        return slots

    def step_scalars(self, lr, step, shared):
        alpha = ops.divide(ops.multiply(lr, ops.sqrt(one_minus_power(self.beta_2, step))),
                           one_minus_power(self.beta_1, step))
        return {"alpha": alpha}

    def update_variable(self, grad, param, slots, lr, step, alpha=None):
        if alpha is None:
            alpha = self.step_scalars(lr, step, {})["alpha"]
        m = _ema(ops, slots["momentum"], grad, self.beta_1)
        v = _ema(ops, slots["velocity"], ops.square(grad), self.beta_2)
        new_slots = {"momentum": m, "velocity": v}
        if self.amsgrad:
            v = ops.maximum(slots["velocity_hat"], v)
            new_slots["velocity_hat"] = v
        update = ops.divide(ops.multiply(m, alpha), ops.add(ops.sqrt(v), self.epsilon))
        return ops.subtract(param, update), new_slots

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "amsgrad": self.amsgrad})
        return config


@register_serializable("ember")
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), Keras 3 formulation.

    Each step first does ``param -= lr * weight_decay * param``, then the :class:`Adam`
    update; this equals ``torch.optim.AdamW`` up to Adam's epsilon placement.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        weight_decay: decay rate; required (not None). Defaults to 0.004.
        beta_1, beta_2, epsilon, amsgrad: as :class:`Adam`.
        **kwargs: the other :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
        >>> params = {"w": ops.ones((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.zeros((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)
        0.95
    """

    default_name = "adamw"
    fused_kernel = "adam"

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False, **kwargs: Any) -> None:
        if weight_decay is None:
            raise ValueError("AdamW: `weight_decay` must be a float, received weight_decay=None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, weight_decay=weight_decay, **kwargs)


@register_serializable("ember")
class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm (Kingma & Ba, section 7), Keras 3 formulation.

    ::

        m = m + (grad - m) * (1 - beta_1)
        u = max(beta_2 * u, |grad|)
        param -= lr * m / ((1 - beta_1**t) * (u + epsilon))

    ``torch.optim.Adamax`` puts ``eps`` inside the max instead; they agree for ``epsilon = 0``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: decay of the first moment. Defaults to 0.9.
        beta_2: decay of the infinity norm. Defaults to 0.999.
        epsilon: added to the norm. Defaults to 1e-7.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adamax(learning_rate=0.1)
        >>> params = {"w": ops.ones((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)
        0.9
    """

    default_name = "adamax"
    fused_kernel = "adamax"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments("Adamax", beta_1, beta_2, epsilon)

    def slot_initializers(self) -> dict[str, float]:
        return {"momentum": 0.0, "norm": 0.0}

    def step_scalars(self, lr, step, shared):
        return {"step_size": ops.divide(lr, one_minus_power(self.beta_1, step))}

    def update_variable(self, grad, param, slots, lr, step, step_size=None):
        if step_size is None:
            step_size = self.step_scalars(lr, step, {})["step_size"]
        m = _ema(ops, slots["momentum"], grad, self.beta_1)
        u = ops.maximum(ops.multiply(slots["norm"], self.beta_2), ops.abs(grad))
        param = ops.subtract(param, ops.divide(ops.multiply(m, step_size), ops.add(u, self.epsilon)))
        return param, {"momentum": m, "norm": u}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config


@register_serializable("ember")
class Nadam(Optimizer):
    """Nadam: Adam with Nesterov momentum (Dozat), Keras 3 formulation.

    With ``u_t = beta_1 * (1 - 0.5 * 0.96**t)`` and the running product ``u_product``
    (optimizer-wide state, ``opt_state["u_product"]``, after this step's factor)::

        m = m + (grad - m) * (1 - beta_1);  v = v + (grad**2 - v) * (1 - beta_2)
        m_hat = u_{t+1} * m / (1 - u_product * u_{t+1}) + (1 - u_t) * grad / (1 - u_product)
        param -= lr * m_hat / (sqrt(v / (1 - beta_2**t)) + epsilon)

    This is ``torch.optim.NAdam`` with ``momentum_decay=1.0`` (torch's default 0.004 makes
    its momentum schedule ``0.96**(0.004 t)``).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: decay of the first moment. Defaults to 0.9.
        beta_2: decay of the second moment. Defaults to 0.999.
        epsilon: added to ``sqrt(v_hat)``. Defaults to 1e-7.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Nadam(learning_rate=0.1)
        >>> params = {"w": ops.ones((1,))}
        >>> params, state = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4), round(float(ops.to_numpy(state["u_product"])), 4)
        (0.8937, 0.468)
    """

    default_name = "nadam"
    fused_kernel = "nadam"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments("Nadam", beta_1, beta_2, epsilon)

    def slot_initializers(self) -> dict[str, float]:
        return {"momentum": 0.0, "velocity": 0.0}

    def shared_initializers(self) -> dict[str, float]:
        return {"u_product": 1.0}

    def _u(self, step: Any) -> Any:
        """``beta_1 * (1 - 0.5 * 0.96**step)``."""
        return ops.multiply(ops.subtract(1.0, ops.multiply(power(0.96, step), 0.5)), self.beta_1)

    def update_shared(self, shared, step):
        u_product = shared["u_product"]
        return {"u_product": ops.multiply(u_product, ops.cast(self._u(step), ops.dtype(u_product)))}

    def step_scalars(self, lr, step, shared):
        u_product = shared["u_product"]
        u_t, u_next = self._u(step), self._u(ops.add(step, 1.0))
        return {
            # m_hat = m * momentum_factor + grad * grad_factor; then divided by sqrt(v / v_correction) + epsilon
            "momentum_factor": ops.divide(u_next, ops.subtract(1.0, ops.multiply(u_product, u_next))),
            "grad_factor": ops.divide(ops.subtract(1.0, u_t), ops.subtract(1.0, u_product)),
            "v_correction": one_minus_power(self.beta_2, step),
        }

    def update_variable(self, grad, param, slots, lr, step, momentum_factor=None, grad_factor=None,
                        v_correction=None):
        if momentum_factor is None:
            raise ValueError("Nadam.update_variable needs the step_scalars() of this step (it keeps optimizer-wide "
                             "state): call apply_gradients")
        m = _ema(ops, slots["momentum"], grad, self.beta_1)
        v = _ema(ops, slots["velocity"], ops.square(grad), self.beta_2)
        m_hat = ops.add(ops.multiply(m, momentum_factor), ops.multiply(grad, grad_factor))
        v_hat = ops.divide(v, v_correction)
        update = ops.divide(ops.multiply(m_hat, lr), ops.add(ops.sqrt(v_hat), self.epsilon))
        return ops.subtract(param, update), {"momentum": m, "velocity": v}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config


@register_serializable("ember")
class Lamb(Optimizer):
    """LAMB: Adam's direction scaled per parameter by a trust ratio (You et al.), Keras 3 formulation.

    ::

        m, v as in Adam;  update = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
        ratio = ||param|| / ||update|| when both norms are > 0, else 1
        param -= ratio * lr * update

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1, beta_2, epsilon: as :class:`Adam`.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Lamb(learning_rate=0.1)
        >>> params = {"w": ops.convert_to_tensor([3.0, 4.0])}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((2,))}, opt.init(params), params)
        >>> [round(x, 3) for x in ops.to_numpy(params["w"]).tolist()]
        [2.646, 3.646]
    """

    default_name = "lamb"
    fused_kernel = "lamb"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments("Lamb", beta_1, beta_2, epsilon)

    def slot_initializers(self) -> dict[str, float]:
        return {"momentum": 0.0, "velocity": 0.0}

    def step_scalars(self, lr, step, shared):
        return {"m_correction": one_minus_power(self.beta_1, step), "v_correction": one_minus_power(self.beta_2, step)}

    def update_variable(self, grad, param, slots, lr, step, m_correction=None, v_correction=None):
        if m_correction is None:
            m_correction, v_correction = self.step_scalars(lr, step, {}).values()
        m = _ema(ops, slots["momentum"], grad, self.beta_1)
        v = _ema(ops, slots["velocity"], ops.square(grad), self.beta_2)
        m_hat = ops.divide(m, m_correction)
        v_sqrt = ops.add(ops.sqrt(ops.divide(v, v_correction)), self.epsilon)
        update = ops.divide(m_hat, v_sqrt)
        w_norm = ops.sqrt(ops.sum(ops.square(param)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        usable = ops.logical_and(ops.greater(w_norm, 0.0), ops.greater(u_norm, 0.0))
        ratio = ops.where(usable, ops.divide(w_norm, ops.where(usable, u_norm, 1.0)), 1.0)
        param = ops.subtract(param, ops.multiply(update, ops.multiply(ratio, lr)))
        return param, {"momentum": m, "velocity": v}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config
