"""``Adafactor`` (Shazeer & Stern, 2018) and ``Ftrl`` (McMahan et al., 2013), Keras 3 formulas."""

from __future__ import annotations

from typing import Any

import optree

from ember import ops
from ember.serialization import register_serializable
from ember.training.optimizers._math import check_number
from ember.training.optimizers.base import Optimizer


def _rms(x: Any) -> Any:
    return ops.sqrt(ops.mean(ops.square(x)))


@register_serializable("ember")
class Adafactor(Optimizer):
    """Adafactor, Keras 3 formulation: second moments factored into row and column averages.

    For a parameter of rank >= 2 the state is a row average ``r`` (the last axis averaged
    out) and a column average ``c`` (the second-to-last averaged out), so memory grows with
    rows + columns instead of their product; lower ranks keep a full average ``v``::

        beta_2 = 1 - step ** beta_2_decay
        g2 = grad**2 + epsilon_1
        r = beta_2 r + (1 - beta_2) mean(g2, -1);  c = beta_2 c + (1 - beta_2) mean(g2, -2)
        v = (r / mean(r)) outer c                      # (v = beta_2 v + (1 - beta_2) g2 below rank 2)
        u = grad / sqrt(v);  u /= max(1, rms(u) / clip_threshold)
        param -= max(epsilon_2, rms(param)) * min(lr, 1 / sqrt(step)) * u

    With ``relative_step`` and a constant learning rate, ``lr`` is first capped at ``1 / sqrt(step)``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_2_decay: exponent of the second-moment decay schedule. Defaults to -0.8.
        epsilon_1: added to the squared gradient. Defaults to 1e-30.
        epsilon_2: floor of the parameter scale. Defaults to 1e-3.
        clip_threshold: update clipping threshold (RMS). Defaults to 1.0.
        relative_step: cap a constant learning rate at ``1 / sqrt(step)``. Defaults to True.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adafactor(learning_rate=0.5)
        >>> params = {"w": ops.ones((2, 3))}
        >>> state = opt.init(params)
        >>> ops.shape(state["row"]["w"]), ops.shape(state["column"]["w"])
        ((2,), (3,))
        >>> params, state = opt.apply_gradients({"w": ops.ones((2, 3))}, state, params)
        >>> round(float(ops.to_numpy(params["w"])[0, 0]), 4)   # 1 - rms(1) * min(0.5, 1) * 1
        0.5
    """

    default_name = "adafactor"

    def __init__(self, learning_rate: Any = 0.001, beta_2_decay: float = -0.8, epsilon_1: float = 1e-30,
                 epsilon_2: float = 1e-3, clip_threshold: float = 1.0, relative_step: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_2_decay = check_number("Adafactor", "beta_2_decay", beta_2_decay)
        self.epsilon_1 = check_number("Adafactor", "epsilon_1", epsilon_1, 0.0)
        self.epsilon_2 = check_number("Adafactor", "epsilon_2", epsilon_2, 0.0)
        self.clip_threshold = check_number("Adafactor", "clip_threshold", clip_threshold, 0.0)
        if not isinstance(relative_step, bool):
            raise TypeError(f"Adafactor: relative_step must be a bool, received relative_step={relative_step!r}")
        self.relative_step = relative_step

    def slot_initializers(self) -> dict[str, float]:
        return {"velocity": 0.0, "row": 0.0, "column": 0.0}

    def init(self, params: Any) -> dict:
        """As :meth:`Optimizer.init`, with ``row``/``column`` of the factored shapes (0-d below rank 2)."""
        state = super().init(params)

        def factored(param: Any, axis: int) -> Any:
            shape = ops.shape(param)
            if len(shape) < 2:
                return ops.zeros((), dtype=ops.dtype(param))
            kept = shape[:-1] if axis == -1 else shape[:-2] + shape[-1:]
            return ops.zeros(kept, dtype=ops.dtype(param))

        state["row"] = optree.tree_map(lambda p: factored(p, -1), params)
        state["column"] = optree.tree_map(lambda p: factored(p, -2), params)
        return state

    def update_variable(self, grad, param, slots, lr, step):
        if not self.has_schedule and self.relative_step:
            lr = ops.minimum(lr, ops.rsqrt(step))
        rho = ops.minimum(lr, ops.rsqrt(step))
        alpha = ops.multiply(ops.maximum(self.epsilon_2, _rms(param)), rho)
        squared = ops.add(ops.square(grad), self.epsilon_1)
        beta_2 = ops.subtract(1.0, ops.power(step, self.beta_2_decay))
        new_slots = dict(slots)
        if len(ops.shape(param)) >= 2:
            row = ops.add(ops.multiply(beta_2, slots["row"]), ops.multiply(ops.subtract(1.0, beta_2),
                                                                           ops.mean(squared, axis=-1)))
            column = ops.add(ops.multiply(beta_2, slots["column"]), ops.multiply(ops.subtract(1.0, beta_2),
                                                                                 ops.mean(squared, axis=-2)))
            velocity = ops.multiply(ops.expand_dims(ops.divide(row, ops.mean(row, axis=-1, keepdims=True)), -1),
                                    ops.expand_dims(column, -2))
            new_slots.update(row=row, column=column)
        else:
            velocity = ops.add(
                ops.multiply(beta_2, slots["velocity"]), ops.multiply(ops.subtract(1.0, beta_2), squared)
            )
        new_slots["velocity"] = velocity
        update = ops.divide(grad, ops.sqrt(velocity))
        update = ops.divide(update, ops.maximum(1.0, ops.divide(_rms(update), self.clip_threshold)))
        return ops.subtract(param, ops.multiply(alpha, update)), new_slots

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_2_decay": self.beta_2_decay, "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                       "clip_threshold": self.clip_threshold, "relative_step": self.relative_step})
        return config


@register_serializable("ember")
class Ftrl(Optimizer):
    """Follow-the-regularized-leader, Keras 3 formulation (with L1, L2 and L2-shrinkage terms)::

        l2 = l2_regularization_strength + beta / (2 lr)
        g_shrunk = grad + 2 l2_shrinkage_regularization_strength * param
        n_new = n + grad**2
        z += g_shrunk - (n_new**(-lr_power) - n**(-lr_power)) / lr * param
        quadratic = n_new**(-lr_power) / lr + 2 l2
        param = (clip(z, -l1, l1) - z) / quadratic;  n = n_new

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        learning_rate_power: <= 0. Defaults to -0.5.
        initial_accumulator_value: starting ``n`` (>= 0). Defaults to 0.1.
        l1_regularization_strength: >= 0. Defaults to 0.
        l2_regularization_strength: >= 0. Defaults to 0.
        l2_shrinkage_regularization_strength: >= 0. Defaults to 0.
        beta: >= 0. Defaults to 0.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Ftrl(learning_rate=0.1, initial_accumulator_value=0.0)
        >>> params = {"w": ops.zeros((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)   # -z / (sqrt(1) / 0.1) with z = 1
        -0.1
    """

    default_name = "ftrl"

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.learning_rate_power = check_number("Ftrl", "learning_rate_power", learning_rate_power, None, 0.0)
        self.initial_accumulator_value = check_number("Ftrl", "initial_accumulator_value", initial_accumulator_value,
                                                      0.0)
        self.l1_regularization_strength = check_number("Ftrl", "l1_regularization_strength",
                                                       l1_regularization_strength, 0.0)
        self.l2_regularization_strength = check_number("Ftrl", "l2_regularization_strength",
                                                       l2_regularization_strength, 0.0)
        self.l2_shrinkage_regularization_strength = check_number(
            "Ftrl", "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, 0.0)
        self.beta = check_number("Ftrl", "beta", beta, 0.0)

    def slot_initializers(self) -> dict[str, float]:
        return {"accumulator": self.initial_accumulator_value, "linear": 0.0}

    def update_variable(self, grad, param, slots, lr, step):
        power = -self.learning_rate_power
        l2 = ops.add(self.l2_regularization_strength, ops.divide(self.beta, ops.multiply(lr, 2.0)))
        shrunk = ops.add(grad, ops.multiply(param, 2.0 * self.l2_shrinkage_regularization_strength))
        accumulator = slots["accumulator"]
        new_accumulator = ops.add(accumulator, ops.square(grad))
        new_scale, old_scale = ops.power(new_accumulator, power), ops.power(accumulator, power)
        linear = ops.add(slots["linear"], ops.subtract(shrunk, ops.multiply(
            ops.divide(ops.subtract(new_scale, old_scale), lr), param)))
        quadratic = ops.add(ops.divide(new_scale, lr), ops.multiply(l2, 2.0))
        l1 = self.l1_regularization_strength
        param = ops.divide(ops.subtract(ops.clip(linear, -l1, l1), linear), quadratic)
        return param, {"accumulator": new_accumulator, "linear": linear}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"learning_rate_power": self.learning_rate_power,
                       "initial_accumulator_value": self.initial_accumulator_value,
                       "l1_regularization_strength": self.l1_regularization_strength,
                       "l2_regularization_strength": self.l2_regularization_strength,
                       "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength,
                       "beta": self.beta})
        return config
