"""Keras's step overrides: ``fit``/``evaluate``/``predict`` calling a model's own ``train_step``,
``test_step`` or ``predict_step`` for every batch.

When a model class overrides one of those methods (Keras 3's way to customise what ``fit``
does: a GAN, a custom loss, extra metrics), the loops here run it eagerly on each batch and
use the logs dict it returns, as Keras does. The step works on the model as a Keras user
writes it: ``self(x, training=True)`` inside an :class:`ember.GradientTape`,
``self.compute_loss(...)``, ``self.trainable_variables``, ``self.optimizer.apply(...)``,
``self.compute_metrics(...)`` / ``self.metrics``. A model that overrides only ``compute_loss``
(Keras 3's way to change the loss alone, e.g. a distiller's student plus distillation loss) runs
the default ``train_step``/``test_step`` here, which call its ``compute_loss`` as Keras's do.
Without an override ``fit`` keeps its fast pure step (:mod:`ember.training.loops`); nothing here runs.

:class:`StepMetrics` holds the stateful metrics those methods report: the loss tracker
(``Mean(name="loss")``, first in ``model.metrics`` as in Keras) and :class:`CompiledMetrics`,
the metrics given to ``compile`` as one stateful object (``update_state(y, y_pred,
sample_weight)``, ``result()`` -> dict).

Logs: a step returns a dict (nested dicts, such as ``{"compile_metrics": {...}}``, are
flattened as Keras does) or one scalar (logged as ``loss``); values become Python floats
(arrays, e.g. per-class scores, NumPy arrays) for the callbacks. Anything else raises a
TypeError naming the method and what it returned. A step that never calls the optimizer is
allowed; an exception in a step propagates out of ``fit`` (the model's handle is restored
when no step had completed, as for the built-in step).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> class Model(ember.Model):
    ...     def train_step(self, data):
    ...         x, y = data
    ...         with ember.GradientTape() as tape:
    ...             y_pred = self(x, training=True)
    ...             loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
    ...         grads = tape.gradient(loss, self.trainable_variables)
    ...         self.optimizer.apply(grads, self.trainable_variables)
    ...         return self.compute_metrics(x, y, y_pred)
    >>> inputs = ember.Input((3,))
    >>> model = Model(inputs, layers.Dense(1)(inputs))
    >>> model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    >>> x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    >>> history = model.fit(x, x[:, :1], epochs=3, batch_size=8, verbose=0)
    >>> sorted(history.history), history.history["mae"][-1] < history.history["mae"][0]
    (['loss', 'mae'], True)
"""

from __future__ import annotations

import inspect
import numbers
import warnings
import weakref
from typing import Any

import numpy as np

from ember import ops
from ember.training.callbacks.callback_list import _to_float
from ember.training.data.batches import pack_x_y_sample_weight
from ember.training.loops import _concatenate, _map
from ember.training.metrics import Mean


# ============================================================================ metrics
class CompiledMetrics:
    """The metrics given to ``compile`` as one Keras-style stateful metric (``"compile_metrics"``).

    It keeps the pure metric states of the trainer's :class:`~ember.training.compile_utils.CompileMetrics`
    (the same functions the built-in steps use), replaced whole on each update.
    """

    name = "compile_metrics"

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.states: list | None = None

    def _fresh(self) -> list:
        return self.trainer.reset_metrics({})["metrics"]["metrics"]

    def update_state(self, y: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Accumulate one batch (``y``/``y_pred``/``sample_weight`` per output, as the model gives them)."""
        core = self.trainer.core
        states = self.states if self.states is not None else self._fresh()
        self.states = core.compile_metrics.update(states, core.flat(_natives(y), "y"),
                                                  core.flat(_natives(y_pred), "y_pred"),
                                                  core.flat(_natives(sample_weight), "sample_weight"))

    def result(self) -> dict:
        """``{log name: value}`` of every compiled metric."""
        states = self.states if self.states is not None else self._fresh()
        return self.trainer.core.compile_metrics.results(states)

    def reset_state(self) -> None:
        """Start over."""
        self.states = None

    @property
    def metrics(self) -> list:
        """The compiled metric objects."""
        return [entry.metric for entry in self.trainer.core.compile_metrics.entries]


class StepMetrics:
    """The loss tracker and the compiled metrics of one compiled model (see the module docstring)."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.loss_tracker = Mean(name="loss")
        self.compile_metrics = CompiledMetrics(trainer)

    def listed(self) -> list:
        """The loss tracker, then the compiled metrics (when there are any)."""
        found: list = [self.loss_tracker]
        if self.trainer.core.compile_metrics.entries:
            found.append(self.compile_metrics)
        return found


def _natives(tree: Any) -> Any:
    if tree is None:
        return None
    if getattr(type(tree), "__ember_tensor__", False):
        return tree._native
    if isinstance(tree, dict):
        return {k: _natives(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_natives(v) for v in tree)
    return tree if ops.is_array(tree) else ops.convert_to_tensor(np.asarray(tree))


def metric_results(metrics: list) -> dict:
    """``{name: result}`` of each metric; a metric whose result is a dict contributes its entries."""
    logs: dict = {}
    for metric in metrics:
        value = metric.result()
        if isinstance(value, dict):
            logs.update(value)
        else:
            logs[metric.name] = value
    return logs


_TAKES_TRAINING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # compute_loss -> bool


def takes_training(compute_loss: Any) -> bool:
    """Whether a ``compute_loss`` function has a parameter named ``training`` (Keras 3's signature;
    its earlier one had ``allow_empty``): the default steps pass ``training`` only then, as Keras's.

    Example:
        >>> def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False): ...
        >>> takes_training(compute_loss)
        False
    """
    known = _TAKES_TRAINING.get(compute_loss)
    if known is None:
        known = "training" in inspect.signature(compute_loss).parameters
        _TAKES_TRAINING[compute_loss] = known
    return known


# ============================================================================ logs
def _is_scalar(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Number):
        return True
    if getattr(type(value), "__ember_tensor__", False):
        value = value._native
    return ops.is_array(value) and tuple(ops.shape(value)) == ()


def checked_logs(logs: Any, method: str) -> dict:
    """A step's return value as ``{name: float or NumPy array}`` (see the module docstring).

    Raises:
        TypeError: neither a dict nor a scalar, or a log value that is not a number/array.
    """
    if isinstance(logs, dict):
        flat: dict = {}
        _flatten_logs(logs, flat, method)
        return flat
    if _is_scalar(logs):
        return {"loss": _to_float(logs)}
    raise TypeError(f"{method} must return a dict of logs (e.g. {{'loss': loss}}) or a scalar loss, "
                    f"received {type(logs).__name__}: {logs!r:.200}")


def _flatten_logs(logs: dict, out: dict, method: str) -> None:
    for key, value in logs.items():
        if isinstance(value, dict):
            _flatten_logs(value, out, method)
            continue
        if isinstance(value, bool) or not (isinstance(value, numbers.Number) or ops.is_array(value) or
                                           getattr(type(value), "__ember_tensor__", False)):
            raise TypeError(f"{method} returned logs whose value for {key!r} is {type(value).__name__} "
                            f"({value!r:.100}); expected a number or an array")
        out[str(key)] = _to_float(value)


# ============================================================================ loops
def _reset(metrics: list) -> None:
    for metric in metrics:
        metric.reset_state()


class CustomStepFit:
    """One ``fit`` call that runs the model's own ``train_step`` (and ``test_step`` for validation)."""

    def __init__(self, model: Any, iterator: Any, callbacks: Any, epochs: int, initial_epoch: int,
                 validate: Any, validation_freq: Any) -> None:
        self.model = model
        self.iterator = iterator
        self.callbacks = callbacks
        self.epochs = epochs
        self.epoch = initial_epoch
        self.validate = validate  # None, or a function of the callbacks returning the validation logs
        self.validation_freq = validation_freq
        self.completed_steps = 0

    def run(self) -> Any:
        model, callbacks = self.model, self.callbacks
        model.stop_training = False
        callbacks.on_train_begin()
        logs: dict = {}
        for epoch in range(self.epoch, self.epochs):
            _reset(model.metrics)
            callbacks.on_epoch_begin(epoch)
            logs, stepped = self._run_epoch()
            if not stepped:
                warnings.warn("fit: the training data ran out (a generator yields no more batches); training "
                              "stopped. Give a re-iterable data source, or steps_per_epoch.", RuntimeWarning,
                              stacklevel=3)
                break
            self.epoch = epoch + 1
            logs = dict(logs)
            if self.validate is not None and self._validate_now(epoch):
                val_logs = self.validate(callbacks)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            callbacks.on_epoch_end(epoch, logs)
            self.iterator.adapter.on_epoch_end()
            if model.stop_training or self.iterator.ran_out:
                break
        callbacks.on_train_end(logs)
        return callbacks.history

    def _run_epoch(self) -> tuple[dict, bool]:
        model, callbacks = self.model, self.callbacks
        logs: dict = {}
        stepped = False
        for step, batch in self.iterator.epoch(self.epoch):
            callbacks.on_train_batch_begin(step)
            logs = checked_logs(model.train_step(pack_batch(batch)), "train_step")
            stepped = True
            self.completed_steps += 1
            callbacks.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        return logs, stepped

    def _validate_now(self, epoch: int) -> bool:
        freq = self.validation_freq
        if isinstance(freq, int):
            return (epoch + 1) % freq == 0
        return (epoch + 1) in freq


def pack_batch(batch: tuple) -> Any:
    """An adapter's ``(x, y, sample_weight)`` as Keras gives it to a step: ``x``, ``(x, y)`` or ``(x, y, sw)``."""
    x, y, sample_weight = batch
    return pack_x_y_sample_weight(x, y, sample_weight)


def custom_evaluate(model: Any, iterator: Any, callbacks: Any, caller: str = "evaluate") -> dict:
    """Run the model's own ``test_step`` over ``iterator``: the logs of the last batch."""
    _reset(model.metrics)
    if callbacks is not None:
        callbacks.on_test_begin()
    logs: dict | None = None
    for step, batch in iterator.epoch(0):
        if callbacks is not None:
            callbacks.on_test_batch_begin(step)
        logs = checked_logs(model.test_step(pack_batch(batch)), "test_step")
        if callbacks is not None:
            callbacks.on_test_batch_end(step, logs)
    if logs is None:
        raise ValueError(f"{caller}: the data yields no batches")
    iterator.adapter.on_epoch_end()
    if callbacks is not None:
        callbacks.on_test_end(logs)
    return logs


def predict_batch(model: Any, x: Any) -> Any:
    """The model's own ``predict_step`` on one batch of inputs ``x``: its outputs as NumPy arrays
    (``predict_on_batch`` of a model that overrides ``predict_step``, and each batch of ``predict``)."""
    returned = model.predict_step(pack_x_y_sample_weight(x))
    if returned is None:
        raise TypeError("predict_step must return the outputs of the batch (arrays), received None")
    return _map(lambda a: ops.to_numpy(_natives(a)), returned)


def custom_predict(model: Any, iterator: Any, callbacks: Any) -> Any:
    """Run the model's own ``predict_step`` over ``iterator``'s inputs: the outputs concatenated
    along the batch (NumPy arrays, in the structure the step returns)."""
    outputs: list = []
    callbacks.on_predict_begin()
    for step, batch in iterator.epoch(0):
        callbacks.on_predict_batch_begin(step)
        outputs.append(predict_batch(model, batch[0]))
        callbacks.on_predict_batch_end(step, {"outputs": outputs[-1]})
    callbacks.on_predict_end()
    if not outputs:
        raise ValueError("predict: the data yields no batches")
    return _concatenate(outputs)
