"""``SGD``: gradient descent with optional (Nesterov) momentum, Keras 3 formulation."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.optimizers._math import check_number
from ember.training.optimizers.base import Optimizer


@register_serializable("ember")
class SGD(Optimizer):
    """Stochastic gradient descent with momentum (Keras 3 semantics).

    With ``momentum == 0``: ``param -= lr * grad``. Otherwise, with a velocity slot
    ``momentum`` starting at zero::

        velocity = momentum * velocity - lr * grad
        param += velocity                                  # nesterov=False
        param += momentum * velocity - lr * grad           # nesterov=True

    For a constant learning rate this is ``torch.optim.SGD`` (dampening 0) with
    ``velocity = -lr * buffer``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.01.
        momentum: in ``[0, 1]``. Defaults to 0.0.
        nesterov: use Nesterov momentum. Defaults to False.
        **kwargs: the :class:`~ember.optimizers.Optimizer` arguments (weight_decay, clipnorm, ...).

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.SGD(learning_rate=0.1, momentum=0.9)
        >>> params = {"w": ops.ones((1,))}
        >>> state = opt.init(params)
        >>> for _ in range(2):
        ...     params, state = opt.apply_gradients({"w": ops.ones((1,))}, state, params)
        >>> round(float(ops.to_numpy(params["w"])[0]), 4)
        0.71
    """

    default_name = "SGD"
    fused_kernel = "sgd"

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = check_number("SGD", "momentum", momentum, 0.0, 1.0)
        if not isinstance(nesterov, bool):
            raise TypeError(f"SGD: `nesterov` must be a bool, received nesterov={nesterov!r}")
        self.nesterov = nesterov

    def slot_initializers(self) -> dict[str, float]:
        return {"momentum": 0.0} if self.momentum != 0.0 else {}

    def update_variable(self, grad, param, slots, lr, step):
        if self.momentum == 0.0:
            return ops.subtract(param, ops.multiply(grad, lr)), {}
        scaled = ops.multiply(grad, lr)
        velocity = ops.subtract(ops.multiply(slots["momentum"], self.momentum), scaled)
        if self.nesterov:
            param = ops.add(param, ops.subtract(ops.multiply(velocity, self.momentum), scaled))
        else:
            param = ops.add(param, velocity)
        return param, {"momentum": velocity}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
