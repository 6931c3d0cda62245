"""``TrainingAPI``: Keras's ``compile``/``fit``/``evaluate``/``predict`` on ``ember.Model``.

``ember.Model`` (and so ``Sequential``) inherits this mixin. ``compile`` creates an
:class:`ember.Trainer`; ``fit`` trains the model handle's ``state`` (building it from the
first batch if needed), keeps the optimizer state between calls, and returns a
:class:`~ember.callbacks.History`.

``verbose="auto"`` is 1, as in Keras: a progress bar redrawn in place on a terminal, and where
standard output is not one (a pipe, a log file, CI) each bar's final line only, so ``fit`` logs
one line per epoch (after its ``Epoch i/N`` header). Deviations from Keras, on purpose:
``predict`` returns NumPy arrays like Keras, while ``predict_on_batch``/``model(x)`` return native arrays;
``train_on_batch``/``test_on_batch`` keep separate running averages (Keras 3 shares them)
until :meth:`reset_metrics`; ``compile(seed=...)`` is an Ember extension seeding shuffling and
dropout. Every entry point first checks (one leaf, once per call) that the handle's state lives on
the active backend: after ``ember.set_backend`` it raises a TypeError naming both backends and the
fixes, ``ember.set_backend(<old>)`` or ``model.to_backend()`` (see :mod:`ember.training.backend_check`).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> x = np.random.default_rng(0).normal(size=(128, 4)).astype("float32")
    >>> y = (x.sum(axis=1) > 0).astype("int64")
    >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(16, activation="relu"), layers.Dense(2)])
    >>> model.compile(optimizer=ember.optimizers.Adam(0.01),
    ...               loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"], seed=0)
    >>> history = model.fit(x, y, batch_size=32, epochs=30, validation_split=0.25, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss', 'val_accuracy', 'val_loss']
    >>> model.evaluate(x, y, verbose=0, return_dict=True)["accuracy"] > 0.9
    True
    >>> model.predict(x[:3], verbose=0).shape
    (3, 2)
"""

from __future__ import annotations

import numbers
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import optree

from ember import distribute, global_settings, ops
from ember.autodiff.tape import GradientTape
from ember.global_settings import capped
from ember.layers.layer import Layer
from ember.saving.training_state import step_rng
from ember.seeds import derive_seed
from ember.training import backend_check, concurrency, custom_steps, loss_scaling, ownership
from ember.training.callbacks.callback_list import CallbackList
from ember.training.data.adapter import (
    check_class_weight,
    get_adapter,
    is_array_data,
    native_batch,
    split_validation,
    unpack_batch,
)
from ember.training.data.batches import unpack_x_y_sample_weight
from ember.training.data.convert import flatten
from ember.training.data.epoch_iterator import EpochIterator, check_steps
from ember.training.distributed import ShardedAdapter, check_same_weights
from ember.training.handle import TrainingHandle
from ember.training.input_check import EmbeddingIndexCheck, refuse_empty, refuse_several_arrays
from ember.training.loops import FitLoop, evaluate_state, predict_state, to_floats
from ember.training.metrics import Metric
from ember.training.optimizers import variable_updates
from ember.training.steps import batch_size_of
from ember.training.trainer import Trainer

# The model classes whose own ``compile`` runs now (Keras's GAN pattern sets optimizers on self
# there): ``Model.__setattr__`` accepts new attributes while it runs.
_compiling: set = set()


def _verbosity(verbose: Any, caller: str) -> int:
    """``verbose`` as 0, 1 or 2: ``"auto"`` is 1, as in Keras (off a terminal the bar writes its final line only)."""
    if verbose == "auto":
        return 1
    if verbose in (0, 1, 2) and not isinstance(verbose, bool):
        return int(verbose)
    raise ValueError(f"{caller}: verbose must be 'auto', 0, 1 or 2, received {verbose!r}")


def _prints(verbose: int) -> bool:
    """Whether to show a progress bar: verbose, and the main process (ember.distribute)."""
    return verbose != 0 and distribute.is_main_process()


def sharded(adapter: Any, strategy: Any, caller: str) -> Any:
    """``adapter`` as this rank sees it under ``strategy`` (itself without one)."""
    return adapter if strategy is None else ShardedAdapter(adapter, strategy, caller)


def _check_single_input(model: Any, x: Any, caller: str) -> None:
    """A dict ``x`` for a Sequential model (one unnamed input), or several arrays for a one-input model,
    gets an error naming what it takes."""
    refuse_several_arrays(model, x, caller)
    if not isinstance(x, dict) or not hasattr(model, "_input_layer"):
        return
    layer = model._input_layer
    name = f" (its Input is named {layer.name!r})" if layer is not None else ""
    raise TypeError(f"{caller}: x is a dict with keys {sorted(map(str, x))}, but Sequential model {model.name!r} "
                    f"takes one input array{name}: pass the array itself, or use a functional ember.Model with "
                    "named inputs for dict data")


def _check_validation_batch(trainer: Any, state: dict, validation: Any) -> None:
    """Run the losses once on the first validation batch (inference mode), naming validation_data."""
    try:
        trainer.check_batch(state, validation.adapter.peek())
    except (ValueError, TypeError) as error:
        raise type(error)(f"fit(validation_data): {error}") from None


def _non_negative_int(caller: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{caller}: {name} must be a non-negative int, received {value!r}")
    return int(value)


def _flat_results(trainer: Any, logs: dict, return_dict: bool) -> Any:
    if return_dict:
        return logs
    values = [logs[name] for name in trainer.metrics_names if name in logs]
    return values[0] if len(values) == 1 else values


def _compile_override(compile_method: Any) -> Any:
    """A subclass's own ``compile`` (Keras's GAN pattern: ``super().compile()``, then optimizers and
    losses kept on ``self``): the model accepts new attributes while it runs."""
    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = id(self)
        outer = key in _compiling
        _compiling.add(key)
        try:
            return compile_method(self, *args, **kwargs)
        finally:
            if not outer:
                _compiling.discard(key)

    compile.__doc__ = compile_method.__doc__
    compile.__name__ = compile_method.__name__
    compile._wraps_compile = True  # type: ignore[attr-defined]  # a marker on the function object
    return compile


def is_compiling(model: Any) -> bool:
    """Whether ``model``'s own (overriding) ``compile`` runs now."""
    return id(model) in _compiling


def _flat_values(logs: dict) -> Any:
    """``evaluate``'s list of values (one float alone) for logs from an overriding ``test_step``."""
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def _opt_state_reader(model: Any) -> Callable[[], Any]:
    """A function returning ``model``'s current optimizer state (None once the model is gone: the
    function holds it weakly, so an optimizer outliving its model keeps nothing alive)."""
    ref = weakref.ref(model)

    def read() -> Any:
        alive = ref()
        return None if alive is None else alive._training.current_opt_state()

    return read


def _no_strategy(strategy: Any, method: str) -> None:
    if strategy is not None:
        raise NotImplementedError(
            f"an overridden {method} does not run under ember.distribute yet (its optimizer.apply would not "
            "all-reduce the gradients over the ranks); train without a strategy, or use the built-in step "
            "(no override) for data-parallel training")


class TrainingAPI:
    """The Keras training API of ``ember.Model`` (see the module docstring)."""

    if TYPE_CHECKING:  # the host's side of the mixin: ember.Model, a Layer with a training handle
        state: Any
        history: Any
        _training: TrainingHandle
        _keras_style: ClassVar[bool]

        def build(self, input_shape: Any = None, seed: int | None = None) -> dict: ...
        call: Callable[..., Any]
        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
        def _write_state(self, state: dict) -> None: ...
        def _handle_attributes(self) -> tuple[str, ...]: ...
        @property
        def losses(self) -> list: ...
        @property
        def trainable_variables(self) -> list: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("compile")
        if own is not None and not getattr(own, "_wraps_compile", False):
            cls.compile = _compile_override(own)  # type: ignore[method-assign]  # wraps a subclass's own compile

    # --- compile ------------------------------------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, loss_weights: Any = None, metrics: Any = None,
                weighted_metrics: Any = None, run_eagerly: bool = False, steps_per_execution: int = 1,
                jit_compile: Any = "auto", auto_scale_loss: bool = True, seed: int | None = None,
                cuda_graphs: bool = False) -> None:
        """Configure the model for training.

        Args:
            optimizer: name (``"adam"``), config or :class:`ember.optimizers.Optimizer`.
            loss: name, :class:`ember.losses.Loss`, function, or a list/dict per output.
            loss_weights: per-output weights of the losses (list/dict) or one number.
            metrics: metric names/objects/functions; a list per output or a dict for several outputs.
            weighted_metrics: metrics that take the sample weights into account.
            run_eagerly: no compilation (MLX runs op by op; for debugging).
            steps_per_execution: must be 1 (several steps per call are not offered).
            jit_compile: True compiles the train step (``mx.compile`` on MLX, ``torch.compile`` of the
                whole step on torch, after a warm-up of seconds to tens of seconds); ``"auto"`` compiles
                on MLX only (torch runs its fused eager step, as Keras); NumPy has no compiler (True
                warns and runs eagerly); False runs eagerly.
            auto_scale_loss: when the model (or the global policy) is ``mixed_float16``, wrap the
                optimizer in a :class:`~ember.optimizers.LossScaleOptimizer` (dynamic loss scaling), as Keras.
            seed: Ember extension: the base seed of shuffling and dropout in ``fit`` (None: drawn
                from the backend's global random stream, fixed by ``ember.random.set_seed``).
            cuda_graphs: Ember extension: replay ``fit``'s whole step from one CUDA graph (torch on a
                CUDA device; pays for small models, whose steps are bound by kernel launches). A
                runtime choice, not saved with the model. See ``ember.Trainer``.

        Raises:
            ValueError: unknown optimizer/loss/metric names (the valid ones are listed), losses or
                metrics that do not match the outputs.
            NotImplementedError: ``cuda_graphs=True`` off a CUDA device (the message names the device
                and the alternative), under ``ember.distribute`` or with a ``LossScaleOptimizer``.
        """
        if steps_per_execution != 1:
            raise NotImplementedError(
                f"compile: steps_per_execution={steps_per_execution!r} is not supported (every backend runs one "
                "step per call; the per-step overhead is already small); use 1")
        if not isinstance(auto_scale_loss, bool):
            raise TypeError(f"compile: auto_scale_loss must be a bool, received {auto_scale_loss!r}")
        if auto_scale_loss and optimizer is not None and loss_scaling.computes_in_float16(self):
            optimizer = loss_scaling.with_loss_scaling(optimizer)
        trainer = Trainer(self, optimizer=optimizer, loss=loss, metrics=metrics, loss_weights=loss_weights,
                          weighted_metrics=weighted_metrics, jit_compile=jit_compile, run_eagerly=run_eagerly,
                          seed=seed, cuda_graphs=cuda_graphs)
        self._training = TrainingHandle(trainer=trainer, compile_config={  # saved by model.save (ember.saving)
            "loss": loss, "loss_weights": loss_weights, "metrics": metrics, "weighted_metrics": weighted_metrics,
            "run_eagerly": run_eagerly, "jit_compile": jit_compile, "seed": seed})
        self._count_steps_here(trainer)

    def _count_steps_here(self, trainer: Any) -> None:
        """Point ``trainer.optimizer.iterations`` (and a loss-scaling wrapper's inner optimizer's) at
        the step counter of this model's optimizer state, which ``fit``, ``train_on_batch``,
        checkpoints and ``BackupAndRestore`` keep; an ``optimizer.apply`` call counts its own instead."""
        reader = _opt_state_reader(self)
        optimizer = trainer.optimizer
        for each in (optimizer, getattr(optimizer, "inner_optimizer", None)):
            if each is not None:
                variable_updates.count_steps_from(each, reader)

    def _trainer(self, caller: str) -> Any:
        trainer = self._training.trainer
        if trainer is None:
            raise ValueError(f"You must call `compile()` before using the model: {caller}() needs an optimizer "
                             "and a loss (e.g. model.compile(optimizer='adam', loss='mse'))")
        return trainer

    @property
    def compiled(self) -> bool:
        """Whether :meth:`compile` has been called."""
        return self._training.compiled

    @property
    def optimizer(self) -> Any:
        """The optimizer given to :meth:`compile` (None before)."""
        trainer = self._training.trainer
        return None if trainer is None else trainer.optimizer

    @property
    def loss(self) -> Any:
        """The ``loss`` given to :meth:`compile` (None before)."""
        trainer = self._training.trainer
        return None if trainer is None else trainer.loss

    @property
    def metrics_names(self) -> list[str]:
        """The names :meth:`evaluate` returns values for, in order (``["loss"]`` before any metric)."""
        trainer = self._training.trainer
        return ["loss"] if trainer is None else trainer.metrics_names

    def _current_learning_rate(self) -> float:
        live = self._training.live_state
        if live is not None:
            return live.current_learning_rate()
        optimizer = self._trainer("learning rate")
        return float(optimizer.optimizer.learning_rate)

    # --- backend ----------------------------------------------------------------------------
    def _check_backend(self, caller: str) -> None:
        """Raise a TypeError when the state is on a backend other than the active one (one leaf is
        looked at; see :mod:`ember.training.backend_check`). Every entry point calls it once, first."""
        backend_check.check_state_backend(self, caller)

    def _sync_training_backend(self) -> None:
        """Move the training caches (optimizer state, running metrics, step RNG) to the active backend
        when the state is there but they are not: a state replaced by ``load_weights`` (or by hand)
        after ``ember.set_backend``. The caches follow the state, as they would with ``to_backend``."""
        if backend_check.training_is_foreign(self):
            training = backend_check.training_to_active(self, self.state)
            backend_check.drop_other_steps(training)
            self._training = training

    # --- building ---------------------------------------------------------------------------
    def _ensure_built(self, batch_x: Any, seed: int) -> None:
        if self.state is not None:
            return

        known = getattr(self, "_known_input_shape", None)
        if known is not None and known() is None:
            first = flatten(batch_x)[0]
            self.build((None,) + tuple(ops.shape(first))[1:], seed=derive_seed(seed, "build"))
        else:
            self.build(seed=derive_seed(seed, "build"))

    def _snapshot(self) -> dict:
        saved = {key: getattr(self, key) for key in self._handle_attributes()}
        saved["_training"] = self._training.copy()
        return saved

    def _restore(self, saved: dict) -> None:
        for key, value in saved.items():
            object.__setattr__(self, key, value)

    def _train_state(self, trainer: Any, seed: int) -> dict:
        """A TrainState from the handle's state and the optimizer state kept from earlier calls."""
        core = trainer.core
        core.prepare_mask(self.state["params"])
        trainable, _ = core.split(self.state["params"])
        spec = optree.tree_structure(trainable)
        opt_state = self._training.opt_state
        if opt_state is not None and self._training.opt_spec != spec:
            opt_state = None
        state = trainer.init_state(self.state, seed=seed, opt_state=opt_state)
        self._training.opt_spec = spec
        self._count_steps_here(trainer)
        return state

    def _donatable(self, state: dict, restore_point: dict) -> frozenset:
        """``id()`` of the arrays of ``state`` (the TrainState ``fit`` made from the handle) that nothing
        outside this handle reaches: ``fit`` adopts them instead of copying (:mod:`ember.training.ownership`).

        The references this handle accounts for: the TrainState itself, the handle's attribute
        (``state``, ``_training.opt_state``) and the restore point's copy of it; anything else holding
        the state, a sub-tree or an array (the caller's ``before = model.state``) makes it shared.
        """
        saved = restore_point["_training"]
        model_refs = 1 + (self.state is state["model"]) + (restore_point["state"] is state["model"])
        opt_refs = 1 + (self._training.opt_state is state["optimizer"]) + (saved.opt_state is state["optimizer"])
        return (ownership.unshared_leaves(state["model"], model_refs)
                | ownership.unshared_leaves(state["optimizer"], opt_refs))

    # --- fit --------------------------------------------------------------------------------
    @concurrency.trains
    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Any = None, validation_split: float = 0.0, validation_data: Any = None,
            shuffle: Any = True, class_weight: dict | None = None, sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: Any = 1) -> Any:
        """Train the model for ``epochs`` epochs (Keras's arguments and semantics).

        Args:
            x: inputs: arrays (NumPy/native/``ember.Tensor``, lists/dicts for several inputs), an
                :class:`ember.data.Dataset`, a torch ``DataLoader``, or a generator/iterable of
                ``(x, y[, sample_weight])`` batches.
            y: targets for array ``x`` (a list/dict for several outputs).
            batch_size: samples per step for arrays (default 32).
            epochs: index of the last epoch (training runs ``initial_epoch .. epochs - 1``).
            verbose: ``"auto"`` (1), 0, 1 (a progress bar; where standard output is not a terminal, its
                final line once per epoch) or 2 (a line per epoch).
            callbacks: a list of :class:`ember.callbacks.Callback`.
            validation_split: fraction of array data (the last samples, before shuffling) held out.
            validation_data: ``(x_val, y_val[, sample_weight_val])`` or a Dataset/generator.
            shuffle: True (every epoch, seeded), ``"batch"`` or False; arrays and Datasets only.
            class_weight: ``{class: weight}`` scaling each sample's loss by its class.
            sample_weight: per-sample weights for array data.
            initial_epoch: epoch to resume from.
            steps_per_epoch: batches per epoch (the data iterator then persists across epochs).
            validation_steps: batches of validation data per evaluation.
            validation_batch_size: batch size of validation arrays (default: ``batch_size``).
            validation_freq: validate every N epochs, or at the (1-based) epochs listed.

        Returns:
            A :class:`ember.callbacks.History` (also ``model.history``).

        Raises:
            ValueError: fit before compile, arrays of different lengths, labels of the wrong
                shape/dtype for the loss, bad arguments. Nothing is changed when fit raises before
                its first step completes.
        """
        trainer = self._trainer("fit")
        self._check_backend("fit")
        verbose = _verbosity(verbose, "fit")
        epochs = _non_negative_int("fit", "epochs", epochs)
        epochs = min(epochs, global_settings.max_epochs() or epochs)  # Keras's config cap
        initial_epoch = _non_negative_int("fit", "initial_epoch", initial_epoch)
        steps_per_epoch = capped(check_steps(steps_per_epoch, "fit: steps_per_epoch"),
                                 global_settings.max_steps_per_epoch())  # Keras's config caps
        validation_steps = check_steps(validation_steps, "fit: validation_steps")
        if isinstance(validation_freq, bool) or not (
                (isinstance(validation_freq, numbers.Integral) and int(validation_freq) > 0) or (
                isinstance(validation_freq, (list, tuple, set, range)) and all(
                    isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in validation_freq))):
            raise ValueError(f"fit: validation_freq must be a positive int or a list of epochs, "
                             f"received {validation_freq!r}")
        if not isinstance(validation_freq, numbers.Integral):
            validation_freq = set(int(v) for v in validation_freq)
        else:
            validation_freq = int(validation_freq)
        seed = trainer.next_seed()
        resume = self._training.resume  # set by ember.load_model: continue the saved fit exactly
        if resume is not None:
            seed = resume["seed"]
        if validation_split and validation_data is None:
            if not is_array_data(x):
                raise ValueError("fit: validation_split is only supported for array data; give validation_data "
                                 "for a Dataset, DataLoader or generator")
            (x, y, sample_weight), validation_data = split_validation(x, y, sample_weight, validation_split)
        elif validation_split:
            split_validation(x, y, sample_weight, validation_split)  # validates the value
        strategy = distribute.get_strategy()
        _check_single_input(self, x, "fit")
        adapter = sharded(get_adapter(x, y, sample_weight, batch_size, shuffle, class_weight, seed, caller="fit"),
                          strategy, "fit")
        iterator = EpochIterator(adapter, steps_per_epoch)
        validation = self._validation_iterator(validation_data, validation_batch_size or batch_size,
                                               validation_steps, strategy)
        own_step = self._own_step("train_step")
        if own_step is not None:
            return self._fit_with_own_step(trainer, adapter, iterator, validation, callbacks, verbose, epochs,
                                           initial_epoch, validation_freq, seed, strategy, own_step)
        restore_point: dict | None = self._snapshot()
        loop = None
        try:
            first = adapter.peek()
            self._ensure_built(first[0], seed)
            self._sync_training_backend()
            steps = trainer.steps
            state = self._train_state(trainer, seed)
            if resume is not None:
                state["rng"] = step_rng(steps, resume["rng"])
            trainer.check_first_batch(state, first)
            if strategy is not None:
                check_same_weights(strategy, state["model"]["params"], "fit")
            if validation is not None:  # bad validation data fails now, not after a whole epoch of training
                _check_validation_batch(trainer, state, validation)
            assert restore_point is not None  # handed to the loop (and set to None) only below
            state = steps.own(state, self._donatable(state, restore_point))
            callback_list = CallbackList(callbacks, add_history=True, add_progbar=_prints(verbose), model=self,
                                         verbose=verbose, epochs=epochs, steps=iterator.num_steps)
            loop = FitLoop(self, trainer, state, iterator, callback_list, epochs, initial_epoch, validation,
                           validation_freq, seed=seed, strategy=strategy)
            # The loop drops the restore point after its first step, and nothing here keeps the
            # initial state alive: an extra copy of the weights would raise the peak memory.
            if resume is not None and resume.get("step") and resume.get("epoch") == initial_epoch:
                loop.skip_steps = loop.checked_skip(int(resume["step"]))  # saved mid-epoch: continue there
            loop.restore_point, restore_point = restore_point, None
            del state, first
            self._training.resume = None
            history = loop.run()
        except BaseException:
            point = restore_point if loop is None else loop.restore_point
            if point is not None:
                self._restore(point)
            raise
        if self.history is not history:
            self.history = history
        return history

    def _fit_with_own_step(self, trainer: Any, adapter: Any, iterator: Any, validation: Any, callbacks: Any,
                           verbose: int, epochs: int, initial_epoch: int, validation_freq: Any, seed: int,
                           strategy: Any, own_step: str) -> Any:
        """``fit`` with the model's own ``train_step``, or the default one calling its own ``compute_loss``
        (``own_step`` names the overridden method; see :mod:`ember.training.custom_steps`)."""
        _no_strategy(strategy, own_step)
        restore_point = self._snapshot()
        loop = None
        try:
            if self._has_forward():
                self._ensure_built(adapter.peek()[0], seed)
            callback_list = CallbackList(callbacks, add_history=True, add_progbar=_prints(verbose), model=self,
                                         verbose=verbose, epochs=epochs, steps=iterator.num_steps)
            validate = None
            if validation is not None:
                def validate(hooks: Any) -> dict:
                    return self._evaluate_logs(trainer, validation, hooks, None, "fit (validation)")
            loop = custom_steps.CustomStepFit(self, iterator, callback_list, epochs, initial_epoch, validate,
                                              validation_freq)
            history = loop.run()
        except BaseException:
            if loop is None or loop.completed_steps == 0:
                self._restore(restore_point)
            raise
        if self.history is not history:
            self.history = history
        return history

    def _evaluate_logs(self, trainer: Any, iterator: Any, callback_list: Any, strategy: Any, caller: str,
                       keep_state: Any = None) -> dict:
        """Evaluation logs with the model's own ``test_step`` when it overrides one, else the built-in step.

        ``keep_state`` receives the last model state of the built-in loop (stateful RNNs' carried
        states); ``evaluate`` passes it, validation inside ``fit`` does not.
        """
        own_step = self._own_step("test_step")
        if own_step is not None:
            _no_strategy(strategy, own_step)
            return custom_steps.custom_evaluate(self, iterator, callback_list, caller)
        return evaluate_state(trainer, self.state, iterator, callback_list, strategy, caller=caller,
                              keep_state=keep_state)

    def _validation_iterator(self, data: Any, batch_size: int | None, steps: int | None, strategy: Any) -> Any:
        if data is None:
            return None
        if isinstance(data, (tuple, list)) and len(data) in (2, 3) and is_array_data(data[0]):
            vx, vy, vsw = unpack_batch(tuple(data), "validation_data")
            adapter = get_adapter(vx, vy, vsw, batch_size, False, None, 0, caller="fit(validation_data)")
        elif is_array_data(data):
            raise ValueError("fit: validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                             "sample_weight_val), or a Dataset/DataLoader/generator; received arrays without targets")
        else:
            adapter = get_adapter(data, caller="fit(validation_data)")
        return EpochIterator(sharded(adapter, strategy, "fit(validation_data)"), steps)

    # --- evaluate / predict ------------------------------------------------------------------------
    @concurrency.reads
    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None, verbose: Any = "auto",
                 sample_weight: Any = None, steps: int | None = None, callbacks: Any = None,
                 return_dict: bool = False) -> Any:
        """The loss and metrics on the given data, in inference mode.

        Returns:
            A float when only the loss is computed, else a list in the order of
            :attr:`metrics_names`, or a dict with ``return_dict=True``.
        """
        trainer = self._trainer("evaluate")
        self._check_backend("evaluate")
        verbose = _verbosity(verbose, "evaluate")
        steps = check_steps(steps, "evaluate: steps")
        strategy = distribute.get_strategy()
        _check_single_input(self, x, "evaluate")
        adapter = sharded(get_adapter(x, y, sample_weight, batch_size, False, None, 0, caller="evaluate"), strategy,
                          "evaluate")
        iterator = EpochIterator(adapter, steps)
        saved = self._snapshot()
        try:
            first = adapter.peek()
            own_step = self._own_step("test_step") is not None
            if self._has_forward():
                self._ensure_built(first[0], 0)
            if not own_step:
                trainer.check_batch({"model": self.state}, first)  # label values, also where the step is compiled
            callback_list = CallbackList(callbacks, add_progbar=_prints(verbose), model=self, verbose=verbose,
                                         epochs=1, steps=iterator.num_steps)
            logs = self._evaluate_logs(trainer, iterator, callback_list, strategy, "evaluate",
                                       keep_state=self._write_state)
            if own_step:
                return logs if return_dict else _flat_values(logs)
        except BaseException:
            self._restore(saved)
            raise
        return _flat_results(trainer, logs, return_dict)

    @concurrency.reads
    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto", steps: int | None = None,
                callbacks: Any = None) -> Any:
        """The model's outputs for ``x`` (NumPy arrays, in the structure of the model's outputs)."""
        self._check_backend("predict")
        verbose = _verbosity(verbose, "predict")
        steps = check_steps(steps, "predict: steps")
        trainer = self._training.trainer
        if trainer is None:
            trainer = self._training.predict_trainer
            if trainer is None:
                trainer = Trainer(self, optimizer="sgd")
                self._training.predict_trainer = trainer
        strategy = distribute.get_strategy()
        _check_single_input(self, x, "predict")
        adapter = sharded(get_adapter(x, None, None, batch_size, False, None, 0, caller="predict"), strategy,
                          "predict")
        iterator = EpochIterator(adapter, steps)
        saved = self._snapshot()
        try:
            if self._has_forward():
                self._ensure_built(adapter.peek()[0], 0)
            callback_list = CallbackList(callbacks, add_progbar=_prints(verbose), model=self, verbose=verbose,
                                         epochs=1, steps=iterator.num_steps)
            if self._overrides("predict_step"):
                _no_strategy(strategy, "predict_step")
                return custom_steps.custom_predict(self, iterator, callback_list)
            return predict_state(trainer, self.state, iterator, callback_list, strategy,
                                 keep_state=self._write_state)
        except BaseException:
            self._restore(saved)
            raise

    # --- single batches --------------------------------------------------------------------------
    def _batch_state(self, trainer: Any, kind: str) -> dict:
        if kind == "train":
            state = self._train_state(trainer, 0)
            rng = self._training.batch_rng
            if rng is not None:
                state["rng"] = rng
        else:
            state = {"model": self.state}
        metrics = getattr(self._training, f"{kind}_metrics")
        state["metrics"] = metrics if metrics is not None else trainer.reset_metrics({})["metrics"]
        return state

    @concurrency.trains_one_step
    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, class_weight: dict | None = None,
                       return_dict: bool = False) -> Any:
        """One training step on one batch; returns the running loss/metrics since :meth:`reset_metrics`
        (a float, a list in :attr:`metrics_names` order, or a dict)."""
        trainer = self._trainer("train_on_batch")
        self._check_backend("train_on_batch")
        batch = native_batch(x, y, sample_weight, check_class_weight(class_weight))
        refuse_empty("train_on_batch", batch[0])
        if self._own_step("train_step") is not None:
            return self._own_step_on_batch("train_step", batch, return_dict)
        saved = self._snapshot()
        try:
            self._ensure_built(batch[0], trainer.next_seed() if self.state is None else 0)
            self._sync_training_backend()
            state = self._batch_state(trainer, "train")
            index_check = EmbeddingIndexCheck.for_model(trainer.model, "train_on_batch")
            if index_check is not None:  # the step may be compiled: no index check inside it on MLX
                index_check(None, None, batch[0])
            check = trainer.label_check("train_on_batch")
            if check is not None:  # the step may be compiled or fused: check the labels here
                check(None, 0, batch[1])
                check.flush()  # on an accelerator too: the results are read below anyway, and nothing changes
            new = trainer.steps.train_step(state, batch)
        except BaseException:
            self._restore(saved)
            raise
        self.state = trainer.steps.release(new["model"])
        self._training.opt_state = new["optimizer"]
        self._training.train_metrics = new["metrics"]
        self._training.batch_rng = new["rng"]
        return _flat_results(trainer, to_floats(trainer.results(new)), return_dict)

    @concurrency.reads
    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False) -> Any:
        """Loss and metrics on one batch (inference mode), running since :meth:`reset_metrics`."""
        trainer = self._trainer("test_on_batch")
        self._check_backend("test_on_batch")
        batch = native_batch(x, y, sample_weight)
        refuse_empty("test_on_batch", batch[0])
        if self._own_step("test_step") is not None:
            return self._own_step_on_batch("test_step", batch, return_dict)
        saved = self._snapshot()
        try:
            self._ensure_built(batch[0], 0)
            self._sync_training_backend()
            state = self._batch_state(trainer, "test")
            if batch[1] is None and trainer.compile_loss.entries:
                raise ValueError("test_on_batch: y is required to compute the loss")
            index_check = EmbeddingIndexCheck.for_model(trainer.model, "test_on_batch")
            if index_check is not None:  # the step may be compiled: no index check inside it on MLX
                index_check(None, None, batch[0])
            check = trainer.label_check("test_on_batch")
            if check is not None:
                check(None, 0, batch[1])
                check.flush()
            new = trainer.steps.test_step(state, batch)
        except BaseException:
            self._restore(saved)
            raise
        self._training.test_metrics = new["metrics"]
        return _flat_results(trainer, to_floats(trainer.results(new)), return_dict)

    def _own_step_on_batch(self, method: str, batch: tuple, return_dict: bool) -> Any:
        """``train_on_batch``/``test_on_batch`` with the model's own step: its logs (the metrics keep
        running until :meth:`reset_metrics`, as in Keras)."""
        saved = self._snapshot()
        try:
            if self._has_forward():
                self._ensure_built(batch[0], 0)
            logs = custom_steps.checked_logs(getattr(self, method)(custom_steps.pack_batch(batch)), method)
        except BaseException:
            self._restore(saved)
            raise
        return logs if return_dict else _flat_values(logs)

    def reset_metrics(self) -> None:
        """Restart the running averages that :meth:`train_on_batch`/:meth:`test_on_batch` return, and
        every metric of :attr:`metrics`."""
        self._training.train_metrics = None
        self._training.test_metrics = None
        for metric in self.metrics:
            metric.reset_state()

    # --- Keras's step API (what an overriding train_step/test_step/predict_step uses) ------------
    def _overrides(self, name: str) -> bool:
        """Whether the model's class overrides the step method ``name`` (``"train_step"`` ...)."""
        return getattr(type(self), name) is not getattr(TrainingAPI, name)

    def _own_step(self, step: str) -> str | None:
        """The overridden method that makes the loops run the Keras-style ``step`` (``"train_step"`` or
        ``"test_step"``) instead of the fused pure one: ``step`` itself, or ``compute_loss``, which the
        default steps call as Keras's do; None when neither is overridden (the fast path)."""
        if self._overrides(step):
            return step
        return "compute_loss" if self._overrides("compute_loss") else None

    def _has_forward(self) -> bool:
        """Whether the model computes outputs itself (a graph, or a subclass's ``call``): a Keras-style
        model without ``call`` (a GAN holding two models) is never built by ``fit``."""
        return not self._keras_style or type(self).call is not Layer.call

    def _step_metrics(self) -> Any:
        training = self._training
        trainer = training.trainer
        if trainer is None:
            return None
        metrics = training.step_metrics
        if metrics is None or metrics.trainer is not trainer:
            metrics = custom_steps.StepMetrics(trainer)
            training.step_metrics = metrics
        return metrics

    @property
    def metrics(self) -> list:
        """Keras's ``model.metrics``: the loss tracker (named ``"loss"``) first, then the compiled
        metrics as one object (``"compile_metrics"``), then the :class:`ember.metrics.Metric`
        objects the model holds as attributes (e.g. a GAN's ``Mean(name="d_loss")`` trackers).
        Empty before :meth:`compile`, except for the attribute metrics. ``fit``/``evaluate`` reset
        them at the start of each epoch/evaluation when a step is overridden."""
        step_metrics = self._step_metrics()
        found = [] if step_metrics is None else step_metrics.listed()
        for value in self.__dict__.values():
            if isinstance(value, Metric) and all(value is not m for m in found):
                found.append(value)
        return found

    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None,
                     training: bool = True) -> Any:
        """The compiled losses of ``y``/``y_pred`` (per output, weighted) plus :attr:`losses` (the
        ``add_loss`` values of the last call and the weight penalties), as a native scalar a
        :class:`ember.GradientTape` differentiates. ``x`` and ``training`` are accepted as in Keras.

        Override it (Keras 3's signature) to change the loss alone: ``fit``, ``evaluate`` and the batch
        methods then run the default :meth:`train_step`/:meth:`test_step`, which call the override.

        Raises:
            ValueError: before :meth:`compile`, or when there is no loss at all.
        """
        trainer = self._trainer("compute_loss")
        core = trainer.core
        flat = core.flat(custom_steps._natives(y_pred), "y_pred")
        total = None
        if trainer.compile_loss.entries:
            total, _ = trainer.compile_loss(core.flat(custom_steps._natives(y), "y"), flat,
                                            core.flat(custom_steps._natives(sample_weight), "sample_weight"))
        for value in self.losses:
            value = value._native if getattr(type(value), "__ember_tensor__", False) else value
            total = value if total is None else ops.add(total, value)
        if total is None:
            raise ValueError("compute_loss: no loss to compute; pass `loss=` to compile() (or give the model layers "
                             "that add losses)")
        return total

    def _compute_loss(self, x: Any, y: Any, y_pred: Any, sample_weight: Any, training: bool) -> Any:
        """:meth:`compute_loss` as the default steps call it: ``training`` is passed only to an override
        that accepts it (Keras 3's earlier signature had ``allow_empty`` instead), as Keras does."""
        if custom_steps.takes_training(type(self).compute_loss):
            return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training)
        return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """Update the compiled metrics with one batch and return :meth:`get_metrics_result` (Keras's
        ``compute_metrics``; the loss tracker is updated by the step itself)."""
        step_metrics = self._step_metrics()
        if step_metrics is None:
            raise ValueError("You must call `compile()` before compute_metrics()")
        if y is not None:
            step_metrics.compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """``{name: value}`` of every metric of :attr:`metrics` (compiled metrics by their log names)."""
        return custom_steps.metric_results(self.metrics)

    def train_step(self, data: Any) -> dict:
        """One training step on one batch, written as a Keras user writes it; override it to customise
        ``fit`` (Keras 3's ``train_step``). ``data`` is ``x``, ``(x, y)`` or ``(x, y, sample_weight)``.

        Without an override ``fit`` runs its fused pure step instead (same results, faster); this
        default runs when a subclass calls ``super().train_step(data)``.

        Returns:
            The logs: ``{name: value}`` of :attr:`metrics`.
        """
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x, y, y_pred, sample_weight, training=True)
            scaled = self.optimizer.scale_loss(loss)  # a LossScaleOptimizer's scale (mixed_float16), as Keras
        variables = self.trainable_variables
        if variables:
            self.optimizer.apply(tape.gradient(scaled, variables), variables)
        return self._track_loss_and_metrics(loss, x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict:
        """One evaluation step on one batch (Keras 3's ``test_step``); override it to customise
        ``evaluate`` and ``fit``'s validation. Returns the logs of :attr:`metrics`."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, training=False)
        return self._track_loss_and_metrics(loss, x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        """The model's outputs for one batch (Keras 3's ``predict_step``); override it to customise
        ``predict``. ``data`` is the batch's ``x`` (``(x,)`` for several inputs)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _track_loss_and_metrics(self, loss: Any, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict:
        step_metrics = self._step_metrics()
        count = float(batch_size_of(custom_steps._natives(x)))
        step_metrics.loss_tracker.update_state(loss, sample_weight=count)
        return self.compute_metrics(x, y, y_pred, sample_weight)
