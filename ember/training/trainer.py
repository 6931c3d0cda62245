"""``ember.Trainer``: pure training, evaluation and prediction steps over a TrainState.

``model.compile(...)`` creates a Trainer and ``model.fit`` drives it, but it is usable on
its own for custom loops. Its steps are pure functions of an explicit state::

    state = trainer.init_state(seed=0)            # {"model", "optimizer", "metrics", "rng"}
    state, logs = trainer.train_step(state, (x, y))
    state, logs = trainer.test_step(state, (x_val, y_val))
    y_pred = trainer.predict_step(state, x)

``train_step`` never modifies its input state, and each backend takes its fastest path
(torch: autograd + fused in-place optimizer kernels on a private copy; MLX: the whole step
under ``mx.compile``; NumPy: Ember's reverse-mode engine). The same seed gives the same
results (dropout masks included) on every run of a backend.

A custom loop with :class:`ember.GradientTape` (what ``train_step`` does for you)::

    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, losses, ops, optimizers
    >>> ember.set_backend("numpy")
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(64, 3)).astype("float32")
    >>> y = x @ np.array([[1.0], [-2.0], [0.5]], dtype="float32") + 0.3
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(1)])
    >>> state = model.build(seed=0)                     # {"params": ..., "buffers": ...}
    >>> loss_fn = losses.MeanSquaredError()
    >>> optimizer = optimizers.SGD(learning_rate=0.1)
    >>> opt_state = optimizer.init(state["params"])
    >>> for step in range(100):
    ...     with ember.GradientTape() as tape:
    ...         tape.watch(state["params"])
    ...         y_pred, state = model.apply(state, x, training=True)
    ...         loss = loss_fn(y, y_pred)
    ...     grads = tape.gradient(loss, state["params"])
    ...     params, opt_state = optimizer.apply_gradients(grads, opt_state, state["params"])
    ...     state = {"params": params, "buffers": state["buffers"]}
    >>> float(loss) < 1e-3
    True

The same loop with the Trainer (one call per step, metrics included)::

    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer=optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    >>> train_state = trainer.init_state(seed=0)
    >>> for step in range(100):
    ...     train_state = trainer.reset_metrics(train_state)
    ...     train_state, logs = trainer.train_step(train_state, (x, y))
    >>> sorted(logs), float(logs["loss"]) < 1e-3
    (['loss', 'mae'], True)
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import optree

from ember import backends, distribute, ops
from ember.training import optimizers, zero_optimizer
from ember.training.compile_utils import CompileLoss, CompileMetrics, output_names
from ember.training.data.adapter import native_batch, unpack_batch
from ember.training.data.convert import to_native
from ember.training.distributed import StepSync
from ember.training.first_batch import FirstBatchCheck, eager_first_step
from ember.training.label_check import SparseLabelCheck
from ember.training.steps import StepCore


def _output_shapes(model: Any, names: list[str]) -> list | None:
    """The model's output shapes, one per output (None when not known without data)."""
    try:
        shapes = model.compute_output_shape()
    except Exception:  # noqa: BLE001 - an unbuilt Sequential without input shape
        return None
    if isinstance(shapes, dict):
        return [tuple(shapes[n]) for n in names]
    if isinstance(shapes, list) and shapes and isinstance(shapes[0], (tuple, list)):
        return [tuple(s) for s in shapes]
    return [tuple(shapes)]


def check_cuda_graphs(backend: str, device: str, *, distributed: bool = False, loss_scaled: bool = False) -> None:
    """``NotImplementedError`` unless ``cuda_graphs=True`` can run: the torch backend on a CUDA device,
    without ``ember.distribute`` and without a ``LossScaleOptimizer``; the message names what is
    missing and the alternative.

    Example:
        >>> from ember.training.trainer import check_cuda_graphs
        >>> check_cuda_graphs("torch", "cuda:0")
        >>> try:
        ...     check_cuda_graphs("torch", "cpu")
        ... except NotImplementedError as error:
        ...     print(str(error)[:71])
        compile(cuda_graphs=True): CUDA graphs need a CUDA device; the model is
    """
    alternative = "use cuda_graphs=False (the default eager step)"
    if backend != "torch":
        raise NotImplementedError(f"compile(cuda_graphs=True): CUDA graphs need the torch backend on a CUDA device; "
                                  f"the active backend is {backend!r} (MLX compiles its step with "
                                  f"jit_compile=True); {alternative}")
    if not str(device).startswith("cuda"):
        raise NotImplementedError(f"compile(cuda_graphs=True): CUDA graphs need a CUDA device; the model is on "
                                  f"{device!r}. Build the model on a GPU (ember.backends.set_default_device('cuda') "
                                  f"first), or {alternative}")
    if distributed:
        raise NotImplementedError(f"compile(cuda_graphs=True) is not supported under ember.distribute; {alternative}")
    if loss_scaled:
        raise NotImplementedError("compile(cuda_graphs=True) is not supported with a LossScaleOptimizer "
                                  "(mixed_float16); use the mixed_bfloat16 policy, or " + alternative)


def _state_device(model_state: dict | None) -> str:
    """The device of a model state's first param (the backend's default device without one)."""
    leaves = optree.tree_leaves(model_state["params"]) if model_state is not None else []
    return ops.get_device(leaves[0]) if leaves else backends.default_device()


def _model_device(model: Any) -> str:
    """Where ``model`` trains: its state's device once built, else the default device."""
    return _state_device(getattr(model, "state", None))


def _draw_seed() -> int:
    """A seed from the active backend's global stream (``ember.random.set_seed`` fixes it)."""
    value = ops.random.randint((), 0, 2**31 - 1, dtype="int32")
    return int(ops.to_numpy(value))


class Trainer:
    """Pure train/test/predict steps for a model (see the module docstring).

    Args:
        model: an ``ember.Model``/``Sequential`` (anything with ``apply``).
        optimizer: name, config or :class:`ember.optimizers.Optimizer` (Keras default ``"rmsprop"``).
        loss: a loss (name, :class:`ember.losses.Loss`, function), or a list/dict per output.
        metrics: metrics (names, :class:`ember.metrics.Metric`, functions), a list per output or a dict.
        loss_weights: per-output loss weights (list/dict), or a number.
        weighted_metrics: metrics that receive the sample weights.
        jit_compile: True compiles the train step: ``mx.compile`` on MLX, ``torch.compile`` of the whole
            step on torch (:mod:`ember.backends.torch.compiled_step`: seconds to tens of seconds of
            warm-up, then faster steps). ``"auto"`` compiles where it pays without a warm-up worth
            noticing: MLX compiles, torch runs its fused eager step (as Keras's ``"auto"`` on torch).
            NumPy has no compiler: True warns and runs eagerly. False runs eagerly everywhere. A
            ``LossScaleOptimizer`` trains on the same steps: its dynamic scale is an input of the
            step (``StepCore.loss_scale_of``); it skips or applies an update with a device-side
            ``where`` (on torch's CPU, where a read waits for nothing, the host decides).
        run_eagerly: True is ``jit_compile=False`` (for debugging with prints and breakpoints); with
            ``jit_compile=True`` it warns (as Keras) and runs eagerly.
        cuda_graphs: replay ``fit``'s whole torch step (forward, backward, optimizer, metrics) from one
            CUDA graph (:mod:`ember.backends.torch.cuda_graphs`): for small models, whose steps are
            bound by kernel launches. Torch on a CUDA device only; ``NotImplementedError`` elsewhere,
            under ``ember.distribute``, with a ``LossScaleOptimizer``, and (at the first step) for
            models with random layers in training. Not saved with the model.
        seed: base seed of shuffling and dropout in ``fit``; None draws one from the backend's global
            random stream (fixed by ``ember.random.set_seed``).

    Raises:
        ValueError: an unknown optimizer/loss/metric name (the message lists the valid ones), losses
            or metrics that do not match the model's outputs.
        NotImplementedError: ``cuda_graphs=True`` where it cannot run (see :func:`check_cuda_graphs`).

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> trainer = ember.Trainer(model, optimizer=ember.optimizers.SGD(0.1), loss="mse")
        >>> isinstance(trainer, ember.Trainer)
        True
    """

    def __init__(self, model: Any, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                 loss_weights: Any = None, weighted_metrics: Any = None, *, jit_compile: Any = "auto",
                 run_eagerly: bool = False, seed: int | None = None, cuda_graphs: bool = False) -> None:
        if not callable(getattr(model, "apply", None)):
            raise TypeError(f"Trainer: model must be an ember Model (with apply), received {type(model).__name__}")
        if jit_compile not in ("auto", True, False):
            raise ValueError(f"Trainer: jit_compile must be 'auto', True or False, received {jit_compile!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise TypeError(f"Trainer: seed must be an int or None, received {seed!r}")
        if optimizer is None:
            raise ValueError("Trainer: optimizer is required (a name such as 'adam', or an ember.optimizers object)")
        if not isinstance(cuda_graphs, bool):
            raise TypeError(f"Trainer: cuda_graphs must be a bool, received {cuda_graphs!r}")
        optimizer = optimizers.get(optimizer)
        if cuda_graphs:
            check_cuda_graphs(backends.get_backend(), _model_device(model), distributed=distribute.get_strategy()
                              is not None, loss_scaled=isinstance(optimizer, optimizers.LossScaleOptimizer))
        self.cuda_graphs = cuda_graphs
        self.model = model
        self.optimizer = optimizer
        self.output_names = output_names(model)
        self.compile_loss = CompileLoss(loss, loss_weights, self.output_names)
        self.compile_metrics = CompileMetrics(metrics, weighted_metrics, self.output_names, self.compile_loss)
        self.loss = loss
        if jit_compile is True and run_eagerly:
            warnings.warn("Trainer: run_eagerly=True and jit_compile=True: running eagerly (jit_compile ignored)",
                          UserWarning, stacklevel=2)
        self.jit_compile: Any = False if run_eagerly else jit_compile  # "auto", True or False
        self.seed = None if seed is None else int(seed)
        self._fits = 0
        self.core = StepCore(model, self.optimizer, self.compile_loss, self.compile_metrics, self.output_names)
        self.first_batch = FirstBatchCheck(self.core)
        self._steps: dict[str | tuple[str, Any, bool, bool], Any] = {}  # by backend (and strategy, sharding)

    # --- backend steps ---------------------------------------------------------------------
    @property
    def steps(self) -> Any:
        """The active backend's step functions (built on first use, one set per backend)."""
        name = backends.get_backend()
        strategy = distribute.get_strategy()
        shard = strategy is not None and strategy.shard_optimizer
        fully = strategy is not None and strategy.fully_shard
        key = name if strategy is None else (name, strategy, shard, fully)
        steps: Any = self._steps.get(key)
        if steps is None:
            backend = backends.current()
            # shard_optimizer: the steps' optimizer keeps and updates this rank's variables only (zero_optimizer);
            # fully_shard: its rows of each variable, as FSDP2 shards the params (torch's fsdp steps)
            core = zero_optimizer.sharded_core(self.core, strategy, rows=fully) if shard or fully else self.core
            if fully:
                steps = backend.distributed.make_fully_sharded_steps(core, jit=self.jit_compile)
            else:
                steps = backend.training.make_steps(core, jit=self.jit_compile)  # the backend imports no trainer
            if strategy is not None:  # sharded batches sum gradients and metric states over the ranks
                steps.sync = StepSync(strategy.all_sum, strategy.world_size)
            if self.cuda_graphs:  # fit's step replayed from a CUDA graph (the torch steps only)
                check_cuda_graphs(name, backends.default_device(), distributed=strategy is not None,
                                  loss_scaled=isinstance(self.optimizer, optimizers.LossScaleOptimizer))
                backend.cuda_graphs.install(steps)
            self._steps[key] = steps
        return steps

    def batch_transfer(self, model_state: dict) -> Any:
        """How the data loops send batches to the device ``model_state`` lives on: the active backend's
        ``batch_transfer(device)`` (torch on CUDA: :mod:`ember.backends.torch.transfer`), or None
        where batches need nothing extra (the CPU, NumPy, MLX)."""
        make = getattr(backends.current(), "batch_transfer", None)
        return None if make is None else make(_state_device(model_state))

    def drop_steps(self, keep: str | None = None) -> None:
        """Forget the step functions built for every backend but ``keep`` (they are rebuilt on use).

        ``Model.to_backend`` calls it: another backend's steps may hold that backend's arrays
        (torch keeps the last published weights) and compiled functions.
        """
        self._steps = {key: steps for key, steps in self._steps.items()
                       if (key if isinstance(key, str) else key[0]) == keep}

    @property
    def metrics_names(self) -> list[str]:
        """The log names, in order: ``loss``, per-output losses, then metrics."""
        names = ["loss"]
        if self.compile_loss.per_output_logs:
            names += [entry.log_name for entry in self.compile_loss.entries]
        return names + self.compile_metrics.names

    def label_check(self, caller: str) -> SparseLabelCheck | None:
        """The per-batch check of sparse class labels for ``fit``/``evaluate`` (None: no sparse labels)."""
        return SparseLabelCheck.for_trainer(self, _output_shapes(self.model, self.output_names), caller)

    def next_seed(self) -> int:
        """A fresh base seed for one ``fit`` call (derived from ``seed``, or drawn)."""
        self._fits += 1
        if self.seed is None:
            return _draw_seed()
        return int(np.random.SeedSequence([self.seed, self._fits]).generate_state(1)[0] & 0x7FFFFFFF)

    # --- state -----------------------------------------------------------------------------
    def init_state(self, model_state: dict | None = None, seed: int | None = None,
                   opt_state: dict | None = None) -> dict:
        """A fresh TrainState: ``{"model", "optimizer", "metrics", "rng"}``.

        Args:
            model_state: ``{"params", "buffers"}``; defaults to the model's (built if needed and possible).
            seed: seeds dropout and other random layers during training (default: ``self.seed`` or 0).
            opt_state: an optimizer state to continue from (default: a fresh one).
        """
        if model_state is None:
            model_state = self.model.state
            if model_state is None:
                model_state = self.model.build(seed=0 if seed is None else seed)
        if not isinstance(model_state, dict) or set(model_state) != {"params", "buffers"}:
            raise ValueError("Trainer.init_state: model_state must be a {'params': ..., 'buffers': ...} dict, "
                             f"received {type(model_state).__name__}")
        core = self.core
        core.prepare_mask(model_state["params"])
        trainable, _ = core.split(model_state["params"])
        # Fresh, or the kept state in the steps' layout (sharded over the ranks under shard_optimizer=True).
        opt_state = zero_optimizer.opt_state_for(self.steps.core.optimizer, trainable, opt_state)
        shapes = _output_shapes(self.model, self.output_names) or [None] * len(self.output_names)
        if seed is None:
            seed = self.seed if self.seed is not None else 0
        return {"model": model_state, "optimizer": opt_state, "metrics": core.init_metrics(shapes),
                "rng": self.steps.rng(seed)}

    def reset_metrics(self, state: dict) -> dict:
        """``state`` with fresh metric state (the loss average included)."""
        shapes = _output_shapes(self.model, self.output_names) or [None] * len(self.output_names)
        new = dict(state)
        new["metrics"] = self.core.init_metrics(shapes)
        return new

    def results(self, state: dict) -> dict:
        """``{log name: native scalar}`` for the state's metrics (the running loss, metrics)."""
        return self.core.results(state["metrics"])

    # --- steps ----------------------------------------------------------------------------
    @staticmethod
    def _batch(batch: Any) -> tuple:
        return native_batch(*unpack_batch(batch, "train_step/test_step batch"))

    def train_step(self, state: dict, batch: Any) -> tuple[dict, dict]:
        """One optimization step: ``(new_state, logs)``; ``state`` is not modified.

        Args:
            state: a TrainState from :meth:`init_state` or a previous step.
            batch: ``(x, y)`` or ``(x, y, sample_weight)`` (NumPy or native arrays, lists/dicts for
                multi-input/output models).
        """
        self.core.prepare_mask(state["model"]["params"])
        new = self.steps.train_step(state, self._batch(batch))
        return new, self.results(new)

    def test_step(self, state: dict, batch: Any) -> tuple[dict, dict]:
        """Accumulate the loss and metrics of one batch in inference mode: ``(new_state, logs)``."""
        new = self.steps.test_step(state, self._batch(batch))
        return new, self.results(new)

    def predict_step(self, state: dict, x: Any) -> Any:
        """The model's outputs for ``x`` in inference mode (native arrays)."""
        return self.steps.predict_step(state, to_native(x))

    def check_batch(self, state: dict, batch: tuple) -> None:
        """Run the losses once eagerly on ``batch`` (inference mode) so bad labels raise clear errors
        before any training step, also where the step itself is compiled."""
        self.first_batch.check(state, batch, quick=False)

    def check_first_batch(self, state: dict, batch: tuple) -> None:
        """:meth:`check_batch` for ``fit``'s first batch, without a forward pass where the first step
        runs eagerly (:mod:`ember.training.first_batch`): that step finds what only a forward can, and
        :meth:`explain_step_error` then gives the check's error."""
        quick = eager_first_step(backends.get_backend(), self.jit_compile, self.cuda_graphs,
                                 distribute.get_strategy() is not None)
        self.first_batch.check(state, batch, quick=quick)

    def explain_step_error(self, state: dict, batch: tuple) -> Exception | None:
        """``fit``'s first step raised on ``batch``: the eager check's clear error when the data is at
        fault, or None when the check passes (the step's own error stands)."""
        return self.first_batch.explain(state, batch)
