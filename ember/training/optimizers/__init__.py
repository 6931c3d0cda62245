"""Optimizers (Keras 3 names, defaults and math), exported as ``ember.optimizers``.

Every optimizer is pure: ``opt_state = opt.init(params)`` and
``params, opt_state = opt.apply_gradients(grads, opt_state, params)``; see
:mod:`ember.training.optimizers.base` for the state layout. Learning rate schedules are
in ``ember.optimizers.schedules``.

Example:
    >>> import ember
    >>> from ember import ops, optimizers
    >>> ember.set_backend("numpy")
    >>> opt = optimizers.get("adam")
    >>> type(opt).__name__, opt.learning_rate, opt.epsilon
    ('Adam', 0.001, 1e-07)
"""

from __future__ import annotations

from typing import Any, overload

from ember.serialization import add_keras_names
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.training.optimizers import schedules
from ember.training.optimizers.adam import Adam, Adamax, AdamW, Lamb, Nadam
from ember.training.optimizers.adaptive import Adadelta, Adagrad, RMSprop
from ember.training.optimizers.base import Optimizer
from ember.training.optimizers.clipping import clip_by_global_norm, clip_by_norm, global_norm
from ember.training.optimizers.factored import Adafactor, Ftrl
from ember.training.optimizers.lion import Lion
from ember.training.optimizers.loss_scale import LossScaleOptimizer
from ember.training.optimizers.schedules import LearningRateSchedule
from ember.training.optimizers.sgd import SGD
from ember.validation import did_you_mean as _did_you_mean

ALL_OPTIMIZERS = (SGD, Adam, AdamW, Adamax, Nadam, Lamb, RMSprop, Adagrad, Adadelta, Lion, Adafactor, Ftrl)
_BY_NAME = {cls.__name__.lower(): cls for cls in ALL_OPTIMIZERS}
add_keras_names("keras.optimizers", (*ALL_OPTIMIZERS, LossScaleOptimizer))


@overload
def get(identifier: None) -> None: ...
@overload
def get(identifier: Any) -> Optimizer: ...
def get(identifier: Any) -> Optimizer | None:
    """Resolve an optimizer: a name (``"adam"``, ``"Adam"``, any case), a config dict, or an instance.

    A name gives a new instance with Keras's defaults; ``None`` gives ``None``.

    Raises:
        ValueError: an unknown name (the message lists the valid ones) or a config that is not one.
        TypeError: anything else.

    Example:
        >>> from ember import optimizers
        >>> optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.1, "momentum": 0.9}}).momentum
        0.9
        >>> optimizers.get("adamm")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ValueError: unknown optimizer 'adamm' (did you mean 'adam', 'adamw' or 'nadam'?); expected one of
        ['adadelta', 'adafactor', 'adagrad', 'adam', 'adamax', 'adamw', 'ftrl', 'lamb', 'lion', 'nadam', 'rmsprop',
        'sgd']
    """
    if identifier is None or isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"unknown optimizer {identifier!r}{_did_you_mean(identifier, _BY_NAME)}; expected one "
                             f"of {sorted(_BY_NAME)}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise TypeError(f"optimizer: expected a name, an Optimizer or a config dict, received {identifier!r}")


def serialize(optimizer: Optimizer) -> dict:
    """``{"class_name": "ember>Adam", "config": {...}}``.

    Example:
        >>> from ember import optimizers
        >>> optimizers.serialize(optimizers.SGD())["class_name"]
        'ember>SGD'
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizers.serialize: expected an Optimizer, received {optimizer!r}")
    return _serialize(optimizer)


def deserialize(config: dict) -> Optimizer:
    """Inverse of :func:`serialize`; Keras-style ``{"class_name": "adam", "config": {...}}`` also works.

    Example:
        >>> from ember import optimizers
        >>> optimizers.deserialize({"class_name": "rmsprop", "config": {"rho": 0.8}}).rho
        0.8
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"optimizers.deserialize: expected {{'class_name': ..., 'config': ...}}, received {config!r}")
    name = config["class_name"]
    inner = config.get("config") or {}
    bare = name.split(">", 1)[-1] if isinstance(name, str) else name
    if isinstance(bare, str) and bare.lower() in _BY_NAME and (">" not in name or name.startswith("ember>")):
        return _BY_NAME[bare.lower()].from_config(inner)
    result = _deserialize({"class_name": name, "config": inner})
    if not isinstance(result, Optimizer):
        raise ValueError(f"optimizers.deserialize: {name!r} is not an optimizer (got {type(result).__name__})")
    return result


__all__ = [
    "ALL_OPTIMIZERS", "SGD", "Adadelta", "Adafactor", "Ftrl", "Adagrad", "Adam", "AdamW", "Adamax", "Lamb",
    "LearningRateSchedule", "Lion", "LossScaleOptimizer", "Nadam", "Optimizer", "RMSprop", "clip_by_global_norm",
    "clip_by_norm", "deserialize", "get", "global_norm", "schedules", "serialize",
]
