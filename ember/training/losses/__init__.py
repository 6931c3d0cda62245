"""Losses (``ember.losses``): Keras 3's loss classes and functions over :mod:`ember.ops`.

A loss object is configuration only; ``loss(y_true, y_pred, sample_weight=None)``
returns a scalar native array (the per-sample losses for ``reduction="none"``). The
functions (``mean_squared_error``, ...) return per-sample losses. Everything runs on
every backend, differentiates under ``ember.GradientTape``/``ember.value_and_grad`` and
compiles with ``mx.compile``.

Example:
    >>> import ember
    >>> from ember import losses
    >>> ember.set_backend("numpy")
    >>> loss = losses.get("categorical_crossentropy")
    >>> loss.__name__
    'categorical_crossentropy'
    >>> round(float(losses.get("CategoricalCrossentropy")([[0.0, 1.0]], [[0.5, 0.5]])), 6)
    0.693147
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.serialization import add_keras_names
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.training.losses.base import (
    EPSILON,
    REDUCTIONS,
    Loss,
    LossFunctionWrapper,
    reduce_values,
    reduce_weighted_values,
    squeeze_or_expand_to_same_rank,
    standardize_reduction,
)
from ember.training.losses.ctc import CTC, ctc
from ember.training.losses.focal import (
    BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy,
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
)
from ember.training.losses.hinge import (
    CategoricalHinge,
    Hinge,
    SquaredHinge,
    categorical_hinge,
    hinge,
    squared_hinge,
)
from ember.training.losses.overlap import (
    CategoricalGeneralizedCrossEntropy,
    Circle,
    Dice,
    Tversky,
    categorical_generalized_cross_entropy,
    circle,
    dice,
    tversky,
)
from ember.training.losses.probabilistic import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    binary_crossentropy,
    categorical_crossentropy,
    kl_divergence,
    poisson,
    sparse_categorical_crossentropy,
)
from ember.training.losses.regression import (
    CosineSimilarity,
    Huber,
    LogCosh,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    cosine_similarity,
    huber,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
)
from ember.validation import did_you_mean as _did_you_mean

_CLASSES = (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Huber,
    LogCosh, CosineSimilarity, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
    KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge, BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy, Dice, Tversky, CategoricalGeneralizedCrossEntropy, Circle, CTC,
)
_FUNCTIONS = (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_logarithmic_error, huber,
    log_cosh, cosine_similarity, binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy,
    kl_divergence, poisson, hinge, squared_hinge, categorical_hinge, binary_focal_crossentropy,
    categorical_focal_crossentropy, dice, tversky, categorical_generalized_cross_entropy, circle, ctc,
)
add_keras_names("keras.losses", (Loss, LossFunctionWrapper, *_CLASSES, *_FUNCTIONS))
# Keras's lookup table: class names give instances, function names and aliases functions.
ALL_OBJECTS: dict[str, Any] = {cls.__name__: cls for cls in _CLASSES}
ALL_OBJECTS.update({fn.__name__: fn for fn in _FUNCTIONS})
ALL_OBJECTS.update({
    "mse": mean_squared_error, "MSE": mean_squared_error,
    "mae": mean_absolute_error, "MAE": mean_absolute_error,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
    "bce": binary_crossentropy, "BCE": binary_crossentropy,
    "kld": kl_divergence, "KLD": kl_divergence, "kullback_leibler_divergence": kl_divergence,
    "logcosh": log_cosh, "huber_loss": huber,
})


def get(identifier: Any) -> Any:
    """Resolve a loss the way Keras's ``losses.get`` does.

    Args:
        identifier: ``None``; a function name or alias (``"mse"``, ``"mean_squared_error"``:
            the per-sample function); a class name (``"MeanSquaredError"``: a new instance);
            a :class:`Loss` instance or any callable (returned as is); a class (instantiated);
            or a config dict from :func:`serialize`.

    Raises:
        ValueError: an unknown name (the message lists the valid ones).
        TypeError: anything else.

    Example:
        >>> from ember import losses
        >>> losses.get("mse") is losses.mean_squared_error
        True
        >>> type(losses.get("Huber")).__name__
        'Huber'
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        obj = ALL_OBJECTS.get(identifier)
        if obj is None:
            raise ValueError(f"unknown loss {identifier!r}{_did_you_mean(identifier, ALL_OBJECTS)}; expected one of "
                             f"{sorted(ALL_OBJECTS)}")
    else:
        obj = identifier
    if inspect.isclass(obj):
        if not issubclass(obj, Loss):
            raise TypeError(f"loss: expected a Loss subclass, received class {obj.__name__}")
        return obj()
    if callable(obj):
        return obj
    raise TypeError(f"loss: expected a name, a Loss, a function or a config dict, received {identifier!r}")


def serialize(loss: Any) -> Any:
    """The config of a loss object or registered loss function (JSON data).

    Example:
        >>> from ember import losses
        >>> losses.serialize(losses.Huber(delta=2.0))["config"]["delta"]
        2.0
    """
    return _serialize(loss)


def deserialize(config: Any) -> Any:
    """Inverse of :func:`serialize`.

    Example:
        >>> from ember import losses
        >>> losses.deserialize(losses.serialize(losses.Huber(delta=2.0))).get_config()["delta"]
        2.0
    """
    obj = _deserialize(config)
    if not (isinstance(obj, Loss) or callable(obj)):
        raise TypeError(f"loss: config {config!r} does not describe a loss")
    return obj


# A literal list (type checkers and the ember.losses stub read it); tests/test_namespaces.py checks it
# names every class and function of the tables above.
__all__ = [
    "EPSILON", "REDUCTIONS", "ALL_OBJECTS", "Loss", "LossFunctionWrapper", "get", "serialize", "deserialize",
    "reduce_values", "reduce_weighted_values", "squeeze_or_expand_to_same_rank", "standardize_reduction",
    "MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "Huber", "LogCosh", "CosineSimilarity", "BinaryCrossentropy", "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy", "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge",
    "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "Dice", "Tversky",
    "CategoricalGeneralizedCrossEntropy", "Circle", "CTC", "mean_squared_error", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "huber", "log_cosh",
    "cosine_similarity", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy",
    "kl_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge", "binary_focal_crossentropy",
    "categorical_focal_crossentropy", "dice", "tversky", "categorical_generalized_cross_entropy", "circle",
    "ctc",
]
