"""Weight regularizers, activity regularizers and constraints of the convolution layers.

A layer maps its params to the config fields that apply to them
(``_regularizer_fields = {"kernel": "kernel_regularizer", ...}``); this base class then

* resolves the fields in ``__post_init__`` with ``ember.regularizers.get`` /
  ``ember.constraints.get`` (imported inside the functions, so importing the layers
  does not import those modules);
* reports the weight penalties from :meth:`regularization_losses` (none when frozen);
* passes ``activity_regularizer(outputs)`` to :func:`ember.layers.layer.add_loss`;
* reports ``{param: constraint}`` from :meth:`constraints`, which the optimizer
  applies after each update (``ember.constraints.apply_constraints``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember.layers.layer import Layer, add_loss
from ember import constraints, regularizers


class RegularizedLayer(Layer):
    """Base of layers with ``*_regularizer`` / ``*_constraint`` / ``activity_regularizer`` fields.

    Subclasses declare the fields themselves (at Keras's positions in the
    constructor) and map param names to them in the two class variables below.
    """

    _regularizer_fields: ClassVar[dict] = {}
    _constraint_fields: ClassVar[dict] = {}

    def __post_init__(self) -> None:
        super().__post_init__()

        for field in (*self._regularizer_fields.values(), "activity_regularizer"):
            self._normalize(field, regularizers.get(getattr(self, field), f"{self.name}: {field}"))
        for field in self._constraint_fields.values():
            self._normalize(field, constraints.get(getattr(self, field), f"{self.name}: {field}"))

    def _has_param(self, param: str) -> bool:
        return param != "bias" or self.use_bias

    def regularization_losses(self, params: dict) -> list:
        """``regularizer(param)`` for each param that has a regularizer (none when frozen)."""
        return regularizers.weight_penalties(
            self, params, {param: getattr(self, field) for param, field in self._regularizer_fields.items()})

    def constraints(self) -> dict:
        """``{param_name: constraint}`` for the params that have one (none when frozen)."""
        return constraints.weight_constraints(
            self, {param: getattr(self, field) for param, field in self._constraint_fields.items()
                   if self._has_param(param)})

    def _activity_loss(self, outputs: Any) -> Any:
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(outputs))
        return outputs
