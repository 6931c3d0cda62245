"""MLX training steps: ``mx.value_and_grad`` of the pure step, the whole step under ``mx.compile``.

One compiled function takes the whole TrainState (model params and buffers, optimizer
state, metric state and the step seed, all arrays) and a batch, and returns the next
TrainState: the forward pass, the gradient, the optimizer update, constraints and metric
updates fuse into one graph. The step seed is an int64 array (not a Python int), so a
new seed per step does not retrace; dropout builds its PRNG key from it on the device.
A new batch shape (the last, smaller batch) traces once more. ``jit_compile=False`` (or
``run_eagerly=True``) runs the same functions without ``mx.compile``.

Threads: MLX keeps its compile cache per thread, and a thread's cache is destroyed after
the thread has finished; when it still holds entries of a compiled function that lives
on (the model's steps), destroying them takes the GIL, which aborts the process
(``terminate called without an active exception``) once the interpreter is shutting
down. So a thread other than the one that made the steps gets compiled functions of its
own (:class:`_ThreadCompiled`), dropped with the thread's ``threading.local`` while the
thread still holds the GIL: its cache is empty by the time MLX destroys it. The first
step in a new thread traces once more.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("mlx")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer="sgd", loss="mse")
    >>> state = trainer.init_state(seed=0)
    >>> state, logs = trainer.train_step(state, (np.ones((4, 2)), np.zeros((4, 1))))
    >>> str(state["rng"].dtype)
    'mlx.core.int64'
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import mlx.core as mx

from ember.backends._steps import GenericSteps, initial_rng, one_label_per_row

_LABEL_DTYPES = (mx.int32, mx.int64, mx.uint8, mx.int8, mx.int16, mx.uint16, mx.uint32, mx.uint64)


class _FusedLoss:
    """The compiled loss, with the most common case written as MLX's own cross-entropy.

    ``SparseCategoricalCrossentropy(from_logits=True)`` (mean reduction, no ``ignore_class``, no
    sample weights, one output) on float32 logits ``(batch, *positions, classes)`` and integer labels is
    ``mean(logsumexp(logits) - logits[label])``: the math of the generic loss in a third of its
    operations (``mlx.nn.losses.cross_entropy``'s form), so the compiled step has fewer to run.
    Labels out of range are the loops' business (``ember.training.label_check`` checks them before
    the step and raises); here they are clamped into range so that the gather stays inside each
    row. Every other case goes to the generic losses.
    """

    def __init__(self, generic: Any, fused: bool) -> None:
        self.generic = generic
        self.entries = generic.entries
        self.per_output_logs = generic.per_output_logs
        self.fused = fused

    def __call__(self, y_true: list, y_pred: list, sample_weight: list) -> tuple[Any, list]:
        if self.fused:
            entry = self.entries[0]
            labels, logits = y_true[entry.index], y_pred[entry.index]
            if (sample_weight[entry.index] is None and isinstance(logits, mx.array) and isinstance(labels, mx.array)
                    and logits.ndim >= 2 and logits.dtype == mx.float32 and labels.dtype in _LABEL_DTYPES
                    and one_label_per_row(labels.shape, logits.shape)):
                if logits.ndim > 2:  # (batch, *positions, classes): the mean over every position
                    logits = logits.reshape(-1, logits.shape[-1])
                # Clamped: a gather reads no memory outside the row whatever the labels (the loops check
                # them before the step and raise; a clamp costs one fused elementwise op).
                index = mx.clip(labels.reshape(-1, 1), 0, logits.shape[1] - 1)
                picked = mx.take_along_axis(logits, index, axis=-1)
                value = mx.mean(mx.logsumexp(logits, axis=-1) - picked.reshape(-1))
                return value, [value]
        return self.generic(y_true, y_pred, sample_weight)


class _ThreadCompiled(threading.local):
    """Per thread: compiled forms of the steps' functions made in that thread (see the module docstring)."""

    def __init__(self) -> None:
        self.functions: dict[str, Any] = {}

    def __reduce__(self) -> tuple:
        return _ThreadCompiled, ()  # a copy (copy.deepcopy of a model) starts empty: compiled functions aren't copied


class MLXSteps(GenericSteps):
    """The generic pure steps, compiled with ``mx.compile`` (see the module docstring)."""

    def __init__(self, core: Any, jit: Any = True) -> None:
        core = copy.copy(core)  # this backend's own view, with the fused loss
        core.compile_loss = _FusedLoss(core.compile_loss, core.fusable_sparse_crossentropy)
        super().__init__(core, mx.value_and_grad)
        self.jit = jit
        train = super().train_step
        test = super().test_step
        predict = super().predict_step
        self._train = mx.compile(train) if jit else train
        self._test = mx.compile(test) if jit else test
        self._predict = mx.compile(predict) if jit else predict
        self._plain = {"train": train, "test": test, "predict": predict}
        self._home = threading.get_ident()  # the thread whose compiled functions are the attributes above
        self._elsewhere = _ThreadCompiled()
        self._by_window: dict = {}

    def _compiled(self, kind: str) -> Any:
        """The compiled ``kind`` step of a thread other than the one that made the steps (its own)."""
        functions = self._elsewhere.functions
        function = functions.get(kind)
        if function is None:
            function = functions[kind] = mx.compile(self._plain[kind])
        return function

    # --- ember.distribute: one compiled step per batch window --------------------------------
    def _windowed(self, kind: str, window: tuple, batch_type: type) -> Any:
        """The step of ``kind`` for a ShardedBatch's ``window``: its offset and sizes are constants of
        the traced graph (the rank's random draws and gradient weight), so each window compiles once;
        ``mx.distributed.all_sum`` runs inside the compiled function."""
        key = (kind, window)
        step = self._by_window.get(key)
        if step is None:
            generic = GenericSteps.train_step if kind == "train" else GenericSteps.test_step

            def step_fn(state: dict, batch: tuple) -> dict:
                return generic(self, state, batch_type(batch, window))

            step = self._by_window[key] = mx.compile(step_fn) if self.jit else step_fn
        return step

    def rng(self, seed: int) -> Any:
        return mx.array(initial_rng(seed), dtype=mx.int64)

    def train_step(self, state: dict, batch: tuple) -> dict:
        window = getattr(batch, "window", None)
        if window is not None and self.sync is not None:
            return self._windowed("train", window, type(batch))(state, tuple(batch))
        if self.jit and threading.get_ident() != self._home:
            return self._compiled("train")(state, batch)
        return self._train(state, batch)

    def fit_step(self, state: dict, batch: tuple) -> dict:
        new = self.train_step(state, batch)  # lazy: the loop settles it once it holds only the new state
        if self.sync is not None:  # ember.distribute: the collectives run inside the loop's step guard
            mx.eval(new)
        return new

    def settle(self, state: dict) -> None:
        """Evaluate the step ``fit`` took. The loop calls it after replacing its state and the model's,
        so the previous params and optimizer slots are held by the pending graph alone: MLX donates
        their buffers to the new values (as in a raw loop that evaluates after reassigning its state)
        instead of keeping both sets alive."""
        mx.eval(state)

    def test_step(self, state: dict, batch: tuple) -> dict:
        window = getattr(batch, "window", None)
        if window is not None and self.sync is not None:
            new = self._windowed("test", window, type(batch))(state, tuple(batch))
            mx.eval(new["metrics"])
            return new
        test = self._test if not self.jit or threading.get_ident() == self._home else self._compiled("test")
        new = test(state, batch)
        mx.eval(new["metrics"])
        return new

    def predict_step(self, state: dict, x: Any) -> Any:
        if self.jit and threading.get_ident() != self._home:
            return self._compiled("predict")(state, x)
        return self._predict(state, x)


def make_steps(core: Any, jit: Any = True) -> MLXSteps:
    """The MLX steps for ``core`` (the trainer's ``StepCore``); ``jit`` (True or ``"auto"``) compiles them."""
    return MLXSteps(core, jit=bool(jit))
