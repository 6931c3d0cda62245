"""The loops behind ``fit``, ``evaluate`` and ``predict``: batches in, steps, callbacks, logs out.

They drive a :class:`~ember.training.trainer.Trainer`'s backend steps and keep the model
handle in sync: ``model.state`` always holds the weights of the last completed step (so
callbacks can read, copy or replace it), and the per-step Python work is a handful of
attribute reads: logs are computed only when a callback reads them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import ops
from ember.layers.rnn.carried_state import carries_state
from ember.training import concurrency
from ember.training.callbacks.callback_list import BatchLogs, CallbackList, _to_float
from ember.training.callbacks.terminate_on_nan import TerminateOnNaN
from ember.training.distributed import ShardedAdapter, gather_predictions, window_of
from ember.training.input_check import EmbeddingIndexCheck, refuse_empty
from ember.training.nonfinite_loss import NonFiniteLossWatch
from ember.validation import unchecked_values


def to_floats(logs: dict) -> dict:
    """Native scalars -> Python floats (arrays, e.g. per-class scores, as NumPy)."""
    return {k: _to_float(v) for k, v in logs.items()}


def _deferred_results(results: Callable[[dict], dict], state: dict) -> Callable[[], dict]:
    """``results(state["metrics"])`` of this batch's ``state``, computed only if a callback reads the logs."""
    return lambda: results(state["metrics"])


class FitLoop:
    """One ``fit`` call (see the module docstring)."""

    # The handle's attributes before fit (set by fit); a failure before the first step completes
    # restores them, and the first step drops them.
    restore_point: Any = None

    def __init__(self, model: Any, trainer: Any, state: dict, iterator: Any, callbacks: CallbackList,
                 epochs: int, initial_epoch: int, validation: Any, validation_freq: Any, seed: Any = None,
                 strategy: Any = None) -> None:
        self.model = model
        self.seed = seed  # the fit's base seed and the next epoch: saved by ember.saving for exact resume
        self.epoch = initial_epoch
        # Steps completed in the current epoch (saved by ember.saving, so that a checkpoint taken
        # mid-epoch resumes at the next batch), and batches of the first epoch to skip on resume.
        self.step_in_epoch = 0
        self.skip_steps = 0
        self.trainer = trainer
        self.steps = trainer.steps
        self.state = state
        self.iterator = iterator
        self.callbacks = callbacks
        self.epochs = epochs
        self.initial_epoch = initial_epoch
        self.validation = validation
        self.validation_freq = validation_freq
        self.keep_previous = any([getattr(cb, "keeps_previous_state", False) for cb in callbacks])
        self.label_check = _vouched(trainer.label_check("fit"), iterator)
        self.index_check = _vouched_inputs(trainer, iterator, "fit")
        self.refuse_empty = _may_be_empty(iterator)
        self.transfer = trainer.batch_transfer(state["model"])  # batches to the model's device (None: as they are)
        # TerminateOnNaN handles a NaN loss itself (stop and roll back); otherwise fit warns once.
        self.loss_watch = None if any([isinstance(cb, TerminateOnNaN) for cb in callbacks]) else NonFiniteLossWatch()
        pure = getattr(self.steps, "fit_step_is_pure", False)
        self.completed_steps = 0
        self.step_fn = self.steps.train_step if (self.keep_previous and not pure) else self.steps.fit_step
        self.strategy = strategy  # ember.distribute: a barrier after the callbacks of each epoch
        if strategy is not None:
            self.step_fn = guarded(strategy, self.step_fn, "train step")
        self.published: Any = None
        optimizer = trainer.optimizer
        self.known_lr = None if optimizer.has_schedule else optimizer.learning_rate
        if self.known_lr is not None:
            self.state["optimizer"] = optimizer.set_learning_rate(self.state["optimizer"], self.known_lr)
        model._training.live_state = self
        self.step_lock = concurrency.guard_of(model).step_lock  # taken once per step (see _run_epoch)

    # --- handle sync ------------------------------------------------------------------------
    def publish(self) -> None:
        self.published = self.steps.release(self.state["model"])
        self.model.state = self.published

    def adopt_changes(self) -> None:
        """Pick up what callbacks changed: the model's state, the learning rate."""
        model = self.model
        if model.state is not self.published:
            owned = self.steps.own({"model": model.state, "optimizer": self.state["optimizer"],
                                    "metrics": self.state["metrics"], "rng": self.state["rng"]})
            self.state = owned
            self.publish()
        optimizer = self.trainer.optimizer
        if self.known_lr is not None and optimizer.learning_rate != self.known_lr:
            self.state["optimizer"] = optimizer.set_learning_rate(self.state["optimizer"], optimizer.learning_rate)
            self.known_lr = optimizer.learning_rate

    def resume(self, model_state: dict, opt_state: dict, rng: Any, epoch: int, seed: Any, step: int = 0) -> None:
        """Continue an interrupted fit (``ember.callbacks.BackupAndRestore``, from ``on_train_begin``):
        its weights, optimizer state, step RNG, epoch, the steps already done in that epoch and the
        shuffling seed."""
        self.skip_steps = self.checked_skip(int(step or 0))
        self.state = self.steps.own({"model": model_state, "optimizer": opt_state, "metrics": self.state["metrics"],
                                     "rng": rng})
        if self.known_lr is not None and "learning_rate" in opt_state:  # the saved rate wins (ReduceLROnPlateau)

            self.trainer.optimizer.learning_rate = float(ops.to_numpy(self.state["optimizer"]["learning_rate"]))
            self.known_lr = self.trainer.optimizer.learning_rate
        self.initial_epoch = self.epoch = int(epoch)
        if seed is not None:
            self.seed = seed
            if hasattr(self.iterator.adapter, "seed"):
                self.iterator.adapter.seed = int(seed)  # epoch e shuffles with (seed, e)
        self.publish()

    def checked_skip(self, step: int) -> int:
        """``step`` batches to skip at the start of the first epoch, when the data can repeat its
        batch order exactly (arrays, seeded shuffling, no ``steps_per_epoch``); else a ValueError."""
        if step and (self.iterator.steps_per_epoch is not None or not getattr(self.iterator.adapter, "exact_order",
                                                                               False)):
            raise ValueError(
                f"fit: the checkpoint was saved after batch {step - 1} of epoch {self.epoch}, and this data cannot "
                "repeat its batch order exactly to resume there (only array data without steps_per_epoch can). "
                "Resume from a checkpoint saved at an epoch's end (ModelCheckpoint(save_freq='epoch')).")
        return step

    def current_learning_rate(self) -> float:
        optimizer = self.trainer.optimizer
        lr = optimizer.learning_rate_at(self.state["optimizer"]["iterations"], self.state["optimizer"])
        return float(ops.to_numpy(lr)) if not isinstance(lr, (int, float)) else float(lr)

    # --- the loop ------------------------------------------------------------------------------
    def run(self) -> Any:
        model, callbacks, trainer = self.model, self.callbacks, self.trainer
        wants_begin = callbacks.wants("on_train_batch_begin")
        wants_end = callbacks.wants("on_train_batch_end")
        results = trainer.core.results
        model.stop_training = False
        self.publish()
        callbacks.on_train_begin()
        self.adopt_changes()
        logs: dict = {}
        try:
            for epoch in range(self.initial_epoch, self.epochs):
                self.state = trainer.reset_metrics(self.state)
                callbacks.on_epoch_begin(epoch)
                self.adopt_changes()
                stepped = self._run_epoch(epoch, wants_begin, wants_end, results)
                if not stepped:
                    warnings.warn(
                        "fit: the training data ran out (a generator yields no more batches); training stopped. "
                        "Give a re-iterable data source, or steps_per_epoch so that the data lasts "
                        "steps_per_epoch * epochs batches.", RuntimeWarning, stacklevel=3)
                    break
                self.epoch, self.step_in_epoch = epoch + 1, 0
                logs = to_floats(results(self.state["metrics"]))
                if self.validation is not None and self._validate_now(epoch):
                    val_logs = evaluate_state(trainer, self.state["model"], self.validation, callbacks,
                                              self.strategy, caller="fit (validation)")
                    logs.update({f"val_{k}": v for k, v in val_logs.items()})
                callbacks.on_epoch_end(epoch, logs)
                if self.strategy is not None:  # no rank reads a file the main rank is still writing
                    self.strategy.barrier()
                self.iterator.adapter.on_epoch_end()
                self.adopt_changes()
                if model.stop_training or self.iterator.ran_out:
                    if self.iterator.ran_out and not model.stop_training:
                        warnings.warn("fit: the training data ran out before the last epoch; training stopped",
                                      RuntimeWarning, stacklevel=3)
                    break
        finally:
            model._training.opt_state = self.state["optimizer"]
            model._training.last_fit = {"seed": self.seed, "rng": self.state["rng"], "epoch": self.epoch,
                                        "step": self.step_in_epoch}
            model._training.live_state = None
            self.publish()
            self.steps.finish_fit()  # spare arrays and cached views: not needed between fits
        callbacks.on_train_end(logs)
        if self.strategy is not None:
            self.strategy.barrier()
        return callbacks.history

    def _run_epoch(self, epoch: int, wants_begin: bool, wants_end: bool, results: Any) -> bool:
        """The steps of one epoch; whether any ran. The losses skip their eager label-value checks
        (a host sync each): the first batch was checked by ``Trainer.check_first_batch``, and the
        sparse labels by :mod:`ember.training.label_check` (array data: all at once before the
        loop; otherwise one reduction per batch, no sync on an accelerator). When the first step
        raises, ``Trainer.explain_step_error`` runs the eager check on its batch, whose clear error
        replaces the step's where the data is at fault."""
        model, callbacks, step_fn, check = self.model, self.callbacks, self.step_fn, self.label_check
        watch = self.loss_watch
        skip, self.skip_steps = self.skip_steps, 0
        self.step_in_epoch = skip
        stepped = skip > 0
        with unchecked_values():
            for step, batch in self.iterator.epoch(epoch, self.transfer):
                if step < skip:  # resuming mid-epoch: these batches were trained on before the checkpoint
                    continue
                if self.refuse_empty:
                    refuse_empty("fit", batch[0], f"epoch {epoch}, batch {step} (0-based):")
                if self.index_check is not None:
                    self.index_check(epoch, step, batch[0])
                if check is not None:
                    check(epoch, step, batch[1])
                if wants_begin:
                    callbacks.on_train_batch_begin(step)
                # The state before the step is kept only for a rollback (TerminateOnNaN): holding it
                # otherwise would keep a third copy of the weights alive during the next step.
                previous = self.state if self.keep_previous else None
                # A reader in another thread (predict beside fit) waits for a whole step: it never sees
                # a half-written update, nor an MLX step that is published but not yet computed.
                with self.step_lock:
                    try:
                        self.state = step_fn(self.state, batch)
                    except Exception:
                        clear = None
                        if self.completed_steps == 0:  # all or nothing: the state is as it was before fit
                            clear = self.trainer.explain_step_error(self.state, batch)
                        if clear is not None:
                            raise clear from None
                        raise
                    self.step_in_epoch = step + 1
                    stepped = True
                    self.completed_steps += 1
                    self.restore_point = None
                    self.publish()
                    self.steps.settle(self.state)  # MLX computes the step now, from arrays nothing else holds
                if watch is not None:
                    watch(epoch, step, self.state["metrics"]["loss"]["total"])
                if wants_end:
                    state = self.state
                    callbacks.on_train_batch_end(step, BatchLogs(_deferred_results(results, state), self._read_checks))
                self.adopt_changes()
                if model.stop_training:
                    if previous is not None and any([getattr(cb, "rollback", False) for cb in callbacks]):
                        self.state = previous
                        self.publish()
                    break
        self._read_checks()  # the epoch's end: its logs are read as floats next
        return stepped

    def _read_checks(self) -> None:
        """Read the label flags and losses kept on the device (:mod:`ember.training.deferred_reads`):
        called where the loop reads logs on the host anyway."""
        if self.label_check is not None:
            self.label_check.flush()
        if self.loss_watch is not None:
            self.loss_watch.flush()

    def _validate_now(self, epoch: int) -> bool:
        freq = self.validation_freq
        if isinstance(freq, int):
            return (epoch + 1) % freq == 0
        return (epoch + 1) in freq


def _vouched(check: Any, iterator: Any) -> Any:
    """The sparse-label check of a loop over ``iterator``; None once every label of its data was found
    in range at once (array data: :meth:`~ember.training.label_check.SparseLabelCheck.vouch`), so
    that no batch is checked again."""
    if check is None:
        return None
    adapter = getattr(iterator, "adapter", None)
    targets = None if adapter is None else adapter.all_targets()
    return None if targets is not None and check.vouch(targets) else check


def _may_be_empty(iterator: Any) -> bool:
    """Whether a batch of ``iterator`` with no rows is the user's empty batch, to refuse: not for array
    data (it never yields one), nor for one rank's shard of a global batch under ember.distribute (a
    rank may hold none of the rows of a small last batch; the step's all-reduce counts the rows)."""
    return not _in_memory(iterator) and not isinstance(getattr(iterator, "adapter", None), ShardedAdapter)


def _in_memory(iterator: Any) -> bool:
    adapter = getattr(iterator, "adapter", None)
    return adapter is not None and adapter.all_inputs() is not None


def _vouched_inputs(trainer: Any, iterator: Any, caller: str) -> EmbeddingIndexCheck | None:
    """The Embedding index check of a loop over ``iterator`` (:mod:`ember.training.input_check`);
    None when no input feeds an Embedding or every index of the array data is in range."""
    check = EmbeddingIndexCheck.for_model(trainer.model, caller)
    if check is None:
        return None
    adapter = getattr(iterator, "adapter", None)
    inputs = None if adapter is None else adapter.all_inputs()
    if inputs is not None and not check.vouch(inputs):
        check(None, None, inputs)  # array data: raise before any step (the range of the whole x)
    return None if inputs is not None and check.vouched else check


def guarded(strategy: Any, step: Any, what: str) -> Any:
    """``step`` bounded by the strategy's collective timeout (ember.distribute)."""
    def run(state: dict, batch: Any) -> Any:
        with strategy.guard(what):
            return step(state, batch)

    return run


def _carried_forward(trainer: Any) -> Any:
    """For a model with stateful RNNs: ``advance(model_state, x) -> (y_pred, model_state)``, which
    carries their states from batch to batch (as Keras's ``evaluate``/``predict`` do); else None."""
    core = trainer.core
    if not carries_state(core.model):
        return None

    def advance(model_state: dict, x: Any) -> tuple[Any, dict]:
        y_pred, buffers, _ = core.forward(model_state["params"], model_state["buffers"], x, False, None)
        return y_pred, {"params": model_state["params"], "buffers": buffers}

    return advance


def evaluate_state(trainer: Any, model_state: dict, iterator: Any, callbacks: CallbackList | None,
                   strategy: Any = None, caller: str = "evaluate", keep_state: Any = None) -> dict:
    """Loss and metrics over ``iterator``'s data with ``model_state`` (inference mode), as floats.

    ``caller`` names the loop in errors (e.g. a sparse label out of range in some batch). A model
    with stateful RNNs carries their states over the batches; ``keep_state(model_state)``, when
    given, receives the last one (``evaluate`` keeps it; validation inside ``fit`` does not).
    """
    steps = trainer.steps
    advance = _carried_forward(trainer)
    test_step = steps.test_step if strategy is None else guarded(strategy, steps.test_step, "test step")
    check = _vouched(trainer.label_check(caller), iterator)
    index_check = _vouched_inputs(trainer, iterator, caller)
    empty = _may_be_empty(iterator)
    state = {"model": model_state, "metrics": trainer.reset_metrics({})["metrics"]}
    results = trainer.core.results
    wants_end = callbacks is not None and callbacks.wants("on_test_batch_end")
    wants_begin = callbacks is not None and callbacks.wants("on_test_batch_begin")
    if callbacks is not None:
        callbacks.on_test_begin()
    seen = False
    for step, batch in iterator.epoch(0, trainer.batch_transfer(model_state)):
        if batch[1] is None and trainer.compile_loss.entries:
            raise ValueError("evaluate: the data gives no targets y, but the model has a loss to compute")
        if empty:
            refuse_empty(caller, batch[0], f"batch {step} (0-based):")
        if index_check is not None:
            index_check(None, step, batch[0])
        if check is not None:
            check(None, step, batch[1])
        if wants_begin and callbacks is not None:
            callbacks.on_test_batch_begin(step)
        state = test_step(state, batch)
        if advance is not None:  # the metrics above read the carried states; now move them on
            state["model"] = advance(state["model"], batch[0])[1]
        seen = True
        if wants_end and callbacks is not None:
            callbacks.on_test_batch_end(step, BatchLogs(_deferred_results(results, state),
                                                        None if check is None else check.flush))
    if not seen:
        raise ValueError(f"{caller}: the data yields no batches")
    if check is not None:
        check.flush()
    if advance is not None and keep_state is not None:
        keep_state(state["model"])
    logs = to_floats(results(state["metrics"]))
    iterator.adapter.on_epoch_end()
    if callbacks is not None:
        callbacks.on_test_end(logs)
    return logs


def predict_state(trainer: Any, model_state: dict, iterator: Any, callbacks: CallbackList,
                  strategy: Any = None, keep_state: Any = None) -> Any:
    """The model's outputs over ``iterator``'s inputs, concatenated along the batch (NumPy arrays).

    Under ``ember.distribute`` each rank predicts its rows and every rank receives all outputs in order.
    A model with stateful RNNs carries their states over the batches and hands the last model
    state to ``keep_state`` (see :func:`evaluate_state`).
    """
    steps = trainer.steps
    advance = _carried_forward(trainer)
    state = {"model": model_state}
    outputs: list = []
    totals: list = []
    transfer = trainer.batch_transfer(model_state)
    # On an accelerator the outputs are copied to the host without waiting, and read after the last
    # batch (one sync), unless a callback reads each batch's outputs (then as NumPy, at once).
    fetch = transfer is not None and not callbacks.wants("on_predict_batch_end")
    index_check = _vouched_inputs(trainer, iterator, "predict")
    callbacks.on_predict_begin()
    for step, batch in iterator.epoch(0, transfer):
        if index_check is not None:
            index_check(None, step, batch[0])
        callbacks.on_predict_batch_begin(step)
        if advance is None:
            y_pred = steps.predict_step(state, batch[0])
        else:
            y_pred, state["model"] = advance(state["model"], batch[0])
        outputs.append(_fetched(transfer, y_pred) if fetch else _map(ops.to_numpy, y_pred))
        window = window_of(batch)
        totals.append(None if window is None else window[2])
        callbacks.on_predict_batch_end(step, {"outputs": outputs[-1]})
    callbacks.on_predict_end()
    if not outputs:
        raise ValueError("predict: the data yields no batches")
    if advance is not None and keep_state is not None:
        keep_state(state["model"])
    if fetch:
        transfer.host_ready()  # the one wait of the whole predict
        if strategy is None or totals[0] is None:  # joined as host arrays first: one read per output
            return _concatenate(outputs, lambda parts: ops.to_numpy(ops.concatenate(parts, axis=0)))
        outputs = [_map(ops.to_numpy, part) for part in outputs]
    if strategy is not None and totals[0] is not None:
        return gather_predictions(strategy, outputs, totals)
    return _concatenate(outputs)


def _fetched(transfer: Any, value: Any) -> Any:
    """``value``'s arrays with their copies to the host started (read after ``transfer.host_ready()``)."""
    leaves: list = []
    _map(leaves.append, value)
    fetched = iter(transfer.fetch(leaves))
    return _map(lambda _: next(fetched), value)


def _map(fn: Any, value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    return fn(value)


def _concatenate(parts: list, join: Any = None) -> Any:
    """The batches' outputs (structures alike) joined along the batch axis (``join``: NumPy's)."""
    first = parts[0]
    if isinstance(first, dict):
        return {k: _concatenate([p[k] for p in parts], join) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_concatenate([p[i] for p in parts], join) for i in range(len(first)))
    return np.concatenate(parts, axis=0) if join is None else join(parts)
