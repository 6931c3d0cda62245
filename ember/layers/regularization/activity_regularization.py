"""``ActivityRegularization``: add an L1/L2 penalty on the activations to the loss."""

from __future__ import annotations

from typing import Any

from ember import regularizers
from ember.layers.layer import DeclarativeLayer
from ember.layers.loss_collection import add_loss


class ActivityRegularization(DeclarativeLayer):
    """Identity on the inputs that adds ``l1 * sum(|x|) + l2 * sum(x**2)`` to the loss.

    The penalty goes to :func:`ember.layers.loss_collection.add_loss`, so it counts whenever the
    forward pass runs inside :func:`ember.layers.loss_collection.collect_losses` (the trainer
    does this). As in Keras 3 it is not divided by the batch size.

    Args:
        l1: L1 factor (``>= 0``).
        l2: L2 factor (``>= 0``).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> from ember.layers.loss_collection import collect_losses
        >>> ember.set_backend("numpy")
        >>> layer = layers.ActivityRegularization(l1=0.5, name="act_reg")
        >>> with collect_losses() as losses:
        ...     y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[1.0, -3.0]]))
        >>> [float(ops.to_numpy(v)) for v in losses]
        [2.0]
    """

    l1: float = 0.0
    l2: float = 0.0

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            penalty = regularizers.L1L2(l1=self.l1, l2=self.l2)
        except ValueError as error:
            raise ValueError(f"{self.name}: {error}") from None
        self._normalize("l1", penalty.l1)
        self._normalize("l2", penalty.l2)

    def call(self, params: dict, inputs: Any) -> Any:
        add_loss(regularizers.L1L2(l1=self.l1, l2=self.l2)(inputs))
        return inputs

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
