"""Metrics (``ember.metrics``): Keras 3's metrics with a pure state API.

A metric is used as in Keras (``update_state(y_true, y_pred)``, ``result()``,
``reset_state()``); underneath, its state is a dict of native arrays that the pure
``init_state``/``stateless_update_state``/``stateless_result`` thread through, which is what
the compiled training steps use (see :class:`Metric`). Custom metrics subclass
:class:`Metric` with ``add_variable`` (Keras's form) or the pure functions.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> m = metrics.get("accuracy", loss="sparse_categorical_crossentropy")
    >>> type(m).__name__, m.name
    ('SparseCategoricalAccuracy', 'accuracy')
    >>> m.update_state([0, 1], [[0.9, 0.1], [0.8, 0.2]])
    >>> float(m.result())
    0.5
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.serialization import add_keras_names
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.training import losses
from ember.training.losses import (  # Keras's metrics module re-exports the loss functions
    binary_crossentropy,
    binary_focal_crossentropy,
    categorical_crossentropy,
    categorical_focal_crossentropy,
    categorical_hinge,
    hinge,
    huber,
    kl_divergence,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from ember.training.losses.base import to_snake_case
from ember.training.metrics.accuracy import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from ember.training.metrics.at_threshold import (
    PrecisionAtRecall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
)
from ember.training.metrics.auc import AUC
from ember.training.metrics.base import Metric, StatefulMetric
from ember.training.metrics.confusion import (
    FalseNegatives,
    FalsePositives,
    Precision,
    Recall,
    TrueNegatives,
    TruePositives,
)
from ember.training.metrics.correlation import (
    ConcordanceCorrelation,
    PearsonCorrelation,
    concordance_correlation,
    pearson_correlation,
)
from ember.training.metrics.fscore import F1Score, FBetaScore
from ember.training.metrics.iou import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from ember.training.metrics.probabilistic import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    Hinge,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
)
from ember.training.metrics.reduction import Mean, MeanMetricWrapper, Sum
from ember.training.metrics.regression import (
    CosineSimilarity,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    R2Score,
    RootMeanSquaredError,
    cosine_similarity,
)
from ember.validation import did_you_mean as _did_you_mean

_CLASSES = (
    Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, Precision, Recall, TruePositives, FalsePositives,
    TrueNegatives, FalseNegatives, F1Score, FBetaScore, AUC, MeanSquaredError, RootMeanSquaredError,
    MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, LogCoshError, CosineSimilarity,
    R2Score, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence, Poisson,
    Hinge, SquaredHinge, CategoricalHinge, IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU, PearsonCorrelation,
    ConcordanceCorrelation, PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity,
)
_FUNCTIONS = (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, top_k_categorical_accuracy,
    sparse_top_k_categorical_accuracy, cosine_similarity, binary_crossentropy, categorical_crossentropy,
    sparse_categorical_crossentropy, kl_divergence, poisson, hinge, squared_hinge, categorical_hinge, log_cosh,
    mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error,
    binary_focal_crossentropy, categorical_focal_crossentropy, huber, pearson_correlation, concordance_correlation,
)
add_keras_names("keras.metrics", (*_CLASSES, *_FUNCTIONS))
# Keras's lookup table: class names and their snake_case forms (and a few aliases) give classes.
ALL_OBJECTS: dict[str, type] = {cls.__name__: cls for cls in _CLASSES if cls is not MeanMetricWrapper}
ALL_OBJECTS.update({to_snake_case(name): cls for name, cls in list(ALL_OBJECTS.items())})
ALL_OBJECTS.update({
    "acc": Accuracy, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "mse": MeanSquaredError,
    "MSE": MeanSquaredError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError, "mape": MeanAbsolutePercentageError,
    "MAPE": MeanAbsolutePercentageError, "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "logcosh": LogCoshError, "fbeta_score": FBetaScore,
})


def _accuracy_for(loss: Any, output_shape: Any) -> type:
    """The accuracy class ``"accuracy"`` means for this loss / output shape (Keras's rule)."""
    if loss is not None:
        resolved = losses.get(loss)
        fn = resolved.fn if isinstance(resolved, losses.LossFunctionWrapper) else resolved
        if fn is losses.binary_crossentropy:
            return BinaryAccuracy
        if fn is losses.sparse_categorical_crossentropy:
            return SparseCategoricalAccuracy
        if fn is losses.categorical_crossentropy:
            return CategoricalAccuracy
    if output_shape is not None:
        shape = tuple(output_shape)
        return BinaryAccuracy if len(shape) <= 1 or shape[-1] == 1 else CategoricalAccuracy
    return Accuracy


def get(identifier: Any, loss: Any = None, output_shape: Any = None) -> Metric | None:
    """Resolve a metric: a name, a :class:`Metric` (class or instance), a function or a config.

    Args:
        identifier: ``None``; a class name, its snake_case form or an alias (``"mse"``,
            ``"acc"``); a :class:`Metric` instance (returned as is) or subclass (instantiated);
            a plain function (wrapped in :class:`MeanMetricWrapper`); a config dict.
        loss: the model's loss (name, function or :class:`ember.losses.Loss`). With it (or
            ``output_shape``), ``"accuracy"``/``"acc"`` resolve as Keras does: binary
            crossentropy gives :class:`BinaryAccuracy`, sparse categorical crossentropy
            :class:`SparseCategoricalAccuracy`, categorical crossentropy
            :class:`CategoricalAccuracy`; other losses go by ``output_shape``.
        output_shape: the model output's shape: a last axis of 1 means
            :class:`BinaryAccuracy`, more means :class:`CategoricalAccuracy`.

    Raises:
        ValueError: an unknown name (the message lists the valid ones).
        TypeError: anything else that is not a metric.

    Example:
        >>> from ember import metrics
        >>> type(metrics.get("acc", output_shape=(None, 1))).__name__
        'BinaryAccuracy'
        >>> type(metrics.get("mse")).__name__
        'MeanSquaredError'
    """
    if identifier is None:
        return None
    if (isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc")
            and (loss is not None or output_shape is not None)):
        return _accuracy_for(loss, output_shape)(name=identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        obj = ALL_OBJECTS.get(identifier)
        if obj is None:
            raise ValueError(f"unknown metric {identifier!r}{_did_you_mean(identifier, ALL_OBJECTS)}; expected one "
                             f"of {sorted(ALL_OBJECTS)}")
    else:
        obj = identifier
    if inspect.isclass(obj):
        if not issubclass(obj, Metric):
            raise TypeError(f"metric: expected a Metric subclass, received class {obj.__name__}")
        return obj()
    if isinstance(obj, Metric):
        return obj
    if callable(obj):
        return MeanMetricWrapper(obj)
    raise TypeError(f"metric: expected a name, a Metric, a function or a config dict, received {identifier!r}")


def serialize(metric: Any) -> Any:
    """The config of a metric (JSON data).

    Example:
        >>> from ember import metrics
        >>> metrics.serialize(metrics.AUC(curve="PR"))["class_name"]
        'ember.metrics>AUC'
    """
    return _serialize(metric)


def deserialize(config: Any) -> Metric:
    """Inverse of :func:`serialize`.

    Example:
        >>> from ember import metrics
        >>> metrics.deserialize(metrics.serialize(metrics.AUC(curve="PR"))).curve
        'PR'
    """
    obj = _deserialize(config)
    if isinstance(obj, Metric):
        return obj
    if callable(obj) and not inspect.isclass(obj):
        return MeanMetricWrapper(obj)
    raise TypeError(f"metric: config {config!r} does not describe a metric")


# A literal list (type checkers and the ember.metrics stub read it); tests/test_namespaces.py checks it
# names every class and function of the tables above.
__all__ = [
    "ALL_OBJECTS", "Metric", "StatefulMetric", "get", "serialize", "deserialize", "Mean", "Sum",
    "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall", "TruePositives",
    "FalsePositives", "TrueNegatives", "FalseNegatives", "F1Score", "FBetaScore", "AUC", "MeanSquaredError",
    "RootMeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "LogCoshError", "CosineSimilarity", "R2Score", "BinaryCrossentropy", "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy", "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge",
    "IoU", "MeanIoU", "BinaryIoU", "OneHotIoU", "OneHotMeanIoU", "PearsonCorrelation", "ConcordanceCorrelation",
    "PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity", "SpecificityAtSensitivity",
    "accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "cosine_similarity",
    "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "kl_divergence",
    "poisson", "hinge", "squared_hinge", "categorical_hinge", "log_cosh", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error",
    "binary_focal_crossentropy", "categorical_focal_crossentropy", "huber", "pearson_correlation",
    "concordance_correlation",
]
