"""``Lion``: sign-of-momentum updates (Chen et al., 2023), Keras 3 formulation."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.optimizers._math import check_number
from ember.training.optimizers.base import Optimizer


@register_serializable("ember")
class Lion(Optimizer):
    """Lion (EvoLved Sign Momentum).

    ::

        param -= lr * sign(beta_1 * m + (1 - beta_1) * grad)
        m = beta_2 * m + (1 - beta_2) * grad

    Use a learning rate 3-10x smaller than AdamW's (the sign makes every step ``lr`` large).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: interpolation for the update direction, in ``(0, 1]``. Defaults to 0.9.
        beta_2: decay of the momentum. Defaults to 0.99.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Lion(learning_rate=0.1)
        >>> params = {"w": ops.zeros((2,))}
        >>> params, _ = opt.apply_gradients({"w": ops.convert_to_tensor([2.0, -0.5])}, opt.init(params), params)
        >>> [round(x, 4) for x in ops.to_numpy(params["w"]).tolist()]
        [-0.1, 0.1]
    """

    default_name = "lion"
    fused_kernel = "lion"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.99,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = check_number("Lion", "beta_1", beta_1, 0.0, 1.0, low_open=True)
        self.beta_2 = check_number("Lion", "beta_2", beta_2, 0.0, 1.0)

    def slot_initializers(self) -> dict[str, float]:
        return {"momentum": 0.0}

    def update_variable(self, grad, param, slots, lr, step):
        m = slots["momentum"]
        direction = ops.sign(ops.add(ops.multiply(m, self.beta_1), ops.multiply(grad, 1.0 - self.beta_1)))
        param = ops.subtract(param, ops.multiply(direction, lr))
        m = ops.add(ops.multiply(m, self.beta_2), ops.multiply(grad, 1.0 - self.beta_2))
        return param, {"momentum": m}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2})
        return config
