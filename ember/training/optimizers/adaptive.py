"""Per-element adaptive learning rates: ``RMSprop``, ``Adagrad``, ``Adadelta`` (Keras 3 formulas).

All three add ``epsilon`` *inside* the square root (``sqrt(v + epsilon)``), as Keras does;
``torch.optim`` adds it outside for RMSprop and Adagrad (``sqrt(v) + eps``), so those agree
with torch exactly for ``epsilon = 0``. Adadelta matches torch's placement.
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.optimizers._math import check_number
from ember.training.optimizers.base import Optimizer


@register_serializable("ember")
class RMSprop(Optimizer):
    """RMSprop (Hinton), Keras 3 formulation.

    ::

        v = rho * v + (1 - rho) * grad**2
        a = rho * a + (1 - rho) * grad                        # centered only
        increment = lr * grad / sqrt(v - a**2 + epsilon)      # (v + epsilon) when not centered
        mom = momentum * mom + increment; param -= mom        # momentum > 0
        param -= increment                                    # momentum == 0

    With a constant learning rate this is ``torch.optim.RMSprop(alpha=rho, ...)`` up to the
    epsilon placement (Keras's momentum buffer is torch's times ``lr``).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        rho: decay of the squared-gradient average. Defaults to 0.9.
        momentum: in ``[0, 1]``. Defaults to 0.0.
        epsilon: added under the square root. Defaults to 1e-7.
        centered: normalize by the gradient's estimated variance. Defaults to False.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.RMSprop(learning_rate=0.1, epsilon=0.0)
        >>> params = {"w": ops.ones((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)   # 1 - 0.1 / sqrt(0.1)
        0.6838
    """

    default_name = "rmsprop"
    fused_kernel = "rmsprop"

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = check_number("RMSprop", "rho", rho, 0.0, 1.0)
        self.momentum = check_number("RMSprop", "momentum", momentum, 0.0, 1.0)
        self.epsilon = check_number("RMSprop", "epsilon", epsilon, 0.0)
        if not isinstance(centered, bool):
            raise TypeError(f"RMSprop: `centered` must be a bool, received centered={centered!r}")
        self.centered = centered

    def slot_initializers(self) -> dict[str, float]:
        slots = {"velocity": 0.0}
        if self.momentum > 0.0:
            slots["momentum"] = 0.0
        if self.centered:
            slots["average_gradient"] = 0.0
        return slots

    def update_variable(self, grad, param, slots, lr, step):
        rho = self.rho
        velocity = ops.add(ops.multiply(slots["velocity"], rho), ops.multiply(ops.square(grad), 1.0 - rho))
        new_slots = {"velocity": velocity}
        if self.centered:
            average = ops.add(ops.multiply(slots["average_gradient"], rho), ops.multiply(grad, 1.0 - rho))
            new_slots["average_gradient"] = average
            denominator = ops.add(ops.subtract(velocity, ops.square(average)), self.epsilon)
        else:
            denominator = ops.add(velocity, self.epsilon)
        increment = ops.divide(ops.multiply(grad, lr), ops.sqrt(denominator))
        if self.momentum > 0.0:
            increment = ops.add(ops.multiply(slots["momentum"], self.momentum), increment)
            new_slots["momentum"] = increment
        return ops.subtract(param, increment), new_slots

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                       "centered": self.centered})
        return config


@register_serializable("ember")
class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), Keras 3 formulation.

    ::

        accumulator += grad**2          # starts at initial_accumulator_value
        param -= lr * grad / sqrt(accumulator + epsilon)

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        initial_accumulator_value: starting value of the accumulator (>= 0). Defaults to 0.1.
        epsilon: added under the square root. Defaults to 1e-7.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adagrad(learning_rate=0.1, initial_accumulator_value=3.0, epsilon=0.0)
        >>> params = {"w": ops.ones((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)   # 1 - 0.1 * 1 / sqrt(4)
        0.95
    """

    default_name = "adagrad"
    fused_kernel = "adagrad"

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.initial_accumulator_value = check_number(
            "Adagrad", "initial_accumulator_value", initial_accumulator_value, 0.0)
        self.epsilon = check_number("Adagrad", "epsilon", epsilon, 0.0)

    def slot_initializers(self) -> dict[str, float]:
        return {"accumulator": self.initial_accumulator_value}

    def update_variable(self, grad, param, slots, lr, step):
        accumulator = ops.add(slots["accumulator"], ops.square(grad))
        update = ops.divide(ops.multiply(grad, lr), ops.sqrt(ops.add(accumulator, self.epsilon)))
        return ops.subtract(param, update), {"accumulator": accumulator}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"initial_accumulator_value": self.initial_accumulator_value, "epsilon": self.epsilon})
        return config


@register_serializable("ember")
class Adadelta(Optimizer):
    """Adadelta (Zeiler), Keras 3 formulation (= ``torch.optim.Adadelta``).

    ::

        g2 = rho * g2 + (1 - rho) * grad**2
        delta = -sqrt(d2 + epsilon) / sqrt(g2 + epsilon) * grad
        d2 = rho * d2 + (1 - rho) * delta**2
        param += lr * delta

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001 (Keras's default;
            the paper and torch use 1.0).
        rho: decay rate. Defaults to 0.95.
        epsilon: added under both square roots. Defaults to 1e-7.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adadelta(learning_rate=1.0, rho=0.0, epsilon=1.0)
        >>> params = {"w": ops.ones((1,))}
        >>> params, _ = opt.apply_gradients({"w": ops.ones((1,))}, opt.init(params), params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)   # 1 - sqrt(1) / sqrt(2)
        0.2929
    """

    default_name = "adadelta"
    fused_kernel = "adadelta"

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-7,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = check_number("Adadelta", "rho", rho, 0.0, 1.0)
        self.epsilon = check_number("Adadelta", "epsilon", epsilon, 0.0)

    def slot_initializers(self) -> dict[str, float]:
        return {"accumulated_grad": 0.0, "accumulated_delta_var": 0.0}

    def update_variable(self, grad, param, slots, lr, step):
        rho, eps = self.rho, self.epsilon
        g2 = ops.add(ops.multiply(slots["accumulated_grad"], rho), ops.multiply(ops.square(grad), 1.0 - rho))
        d2 = slots["accumulated_delta_var"]
        delta = ops.negative(ops.divide(ops.multiply(ops.sqrt(ops.add(d2, eps)), grad), ops.sqrt(ops.add(g2, eps))))
        d2 = ops.add(ops.multiply(d2, rho), ops.multiply(ops.square(delta), 1.0 - rho))
        param = ops.add(param, ops.multiply(delta, lr))
        return param, {"accumulated_grad": g2, "accumulated_delta_var": d2}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"rho": self.rho, "epsilon": self.epsilon})
        return config
