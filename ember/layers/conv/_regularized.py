"""Weight regularizers, activity regularizers and constraints of the convolution layers.

A layer lists which of its params each config field applies to
(``_regularizer_fields = {"kernel": "kernel_regularizer", ...}``); this base class then

* resolves the fields in ``__post_init__`` through ``ember.regularizers.get`` /
  ``ember.constraints.get`` (imported lazily, so the layers import without them);
* returns the weight penalties from :meth:`regularization_losses` (each a scalar);
* passes ``activity_regularizer(outputs)`` to :func:`ember.layers.layer.add_loss`;
* projects params with :meth:`apply_constraints` (what an optimizer calls after a step).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember.layers.layer import Layer, add_loss


def _module(kind: str) -> Any:
    """``ember.regularizers`` / ``ember.constraints``, or None while that module does not exist."""
    import importlib

    try:
        return importlib.import_module(f"ember.{kind}")
    except ModuleNotFoundError as error:
        if error.name != f"ember.{kind}":
            raise
        return None


def resolve(kind: str, layer_name: str, argument: str, value: Any) -> Any:
    """``None``, or the regularizer/constraint ``value`` names (``kind``: "regularizers"/"constraints")."""
    if value is None:
        return None
    module = _module(kind)
    if module is not None:
        return module.get(value)
    if callable(value):
        return value
    raise ValueError(
        f"{layer_name}: {argument}={value!r} needs ember.{kind}, which is not available; pass a callable instead"
    )


class RegularizedLayer(Layer):
    """Base of layers with ``*_regularizer`` / ``*_constraint`` / ``activity_regularizer`` fields.

    Subclasses declare the fields themselves (their position in the constructor is
    Keras's) and map param names to them in the two class variables below.
    """

    _regularizer_fields: ClassVar[dict] = {}
    _constraint_fields: ClassVar[dict] = {}

    def __post_init__(self) -> None:
        super().__post_init__()
        for field in (*self._regularizer_fields.values(), "activity_regularizer"):
            self._normalize(field, resolve("regularizers", self.name, field, getattr(self, field)))
        for field in self._constraint_fields.values():
            self._normalize(field, resolve("constraints", self.name, field, getattr(self, field)))

    def regularization_losses(self, params: dict) -> list:
        """The weight penalties: ``regularizer(param)`` for each param that has one."""
        losses = []
        for param, field in self._regularizer_fields.items():
            regularizer = getattr(self, field)
            if regularizer is not None and param in params:
                losses.append(regularizer(params[param]))
        return losses

    def apply_constraints(self, params: dict) -> dict:
        """New params with each ``*_constraint`` applied (the input dict is not modified)."""
        constrained = dict(params)
        for param, field in self._constraint_fields.items():
            constraint = getattr(self, field)
            if constraint is not None and param in constrained:
                constrained[param] = constraint(constrained[param])
        return constrained

    def _activity_loss(self, outputs: Any) -> Any:
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(outputs))
        return outputs
