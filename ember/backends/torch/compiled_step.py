"""The torch train step under ``torch.compile``: ``compile(jit_compile=True)`` on torch.

The whole step is one pure function of the TrainState and a batch: the forward pass, the
losses, the gradients (``torch.func.grad``, traced into the same graph), the optimizer's
functional update, constraints, the metric updates and the next step seed. ``torch.compile``
(Inductor) turns it into one graph with ``fullgraph=True``, so a graph break is never
silently accepted: it is reported and the step runs eagerly instead (below). Dense, convolution,
pooling, normalization and dropout layers compile as one graph; torch's fused LSTM/GRU kernels
cannot be differentiated by ``torch.func.grad`` inside a graph (torch 2.13 fails in their
backward), so recurrent models take the eager fallback.

* **Warm-up.** The first step compiles (Dynamo traces, AOTAutograd builds the joint graph,
  Inductor generates and builds C++/Triton kernels) before it returns:
  :attr:`CompiledSteps.compile_seconds` holds what it took (``benchmarks/training.py`` reports
  it apart; W1: 19-92 s on a shared 2-core CPU, one thread; the small test models 8-40 s). It
  pays only for long runs (W1 saves ~0.7 ms of CPU per step here: tens of thousands of steps),
  which is why ``jit_compile="auto"`` keeps torch eager (as Keras does).
* **Batch sizes.** The batch dimension of every input is marked dynamic
  (``torch._dynamo.maybe_mark_dynamic``), so the last, smaller batch of an epoch reuses the
  graph instead of compiling again (no padding: a padded batch would change BatchNorm's
  statistics and the loss's mean). Where the compiled graph still holds only for a range of
  batch sizes (Inductor's CPU code picks its summation by size and guards on it; Dynamo
  specialises sizes 0 and 1), a batch outside it runs the same step eagerly
  (``torch.compiler.set_stance("eager_on_recompile")``): one graph per model, never a second
  compile in the middle of a run.
  :attr:`CompiledSteps.eager_batches` counts the batches run so. A refused batch with as many
  rows as the compiling one means a guard on something else failed (something the step reads
  changed between steps), and a ``RuntimeWarning`` (once) names it.
* **Randomness.** The step seed is a 0-d int64 tensor on the device (as on MLX), so a new
  seed per step does not recompile; Dropout draws its mask from that seed with the torch
  backend's counter-based generator (:func:`ember.backends.torch.random.counter_draws`), the same
  masks compiled or eager, reproducible from the seed. They differ from the masks of the
  eager ``jit_compile=False`` step, which seeds a ``torch.Generator`` from an int (a
  ``Generator`` cannot enter a compiled graph, and Inductor's own Philox stream is tied to
  the global generator, not to Ember's seed).
* **Failures.** If compiling fails (a graph break, an Inductor error), the step runs the
  same pure function eagerly; when that succeeds, a ``RuntimeWarning`` names the reason and
  the rest of the run stays eager (``jit_compile=False`` gives the faster fused eager step).
  When the eager step fails too, its error is raised: it is the model's, not the compiler's.
* **Integrity.** Nothing in the given state is written: the step returns new tensors and
  ``fit`` swaps them in as a whole, so an interrupted step leaves the previous, complete
  state (issue 20's guarantee without spare buffers or held signals), and ``fit`` starts
  without copying the parameters or the optimizer state.

Example:
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("torch")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer="sgd", loss="mse", jit_compile=True)
    >>> type(trainer.steps).__name__, trainer.steps.rng(0)   # the first train step compiles
    ('CompiledTorchSteps', tensor(1))
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import optree
import torch

from ember.backends._steps import advance_rng, initial_rng
from ember.backends.torch._base import DEVICE
from ember.backends.torch.random import counter_draws
from ember.validation import unchecked_values

# Inductor with the whole step as one graph (a graph break is an error, reported by the fallback).
_BACKEND: Any = "inductor"


def _detach(value: Any) -> Any:
    return value.detach() if isinstance(value, torch.Tensor) else value


def _mark_batch_dynamic(batch: tuple) -> None:
    """Mark dim 0 of every batch tensor dynamic (a hint: Dynamo may still specialise it)."""
    leaf: Any
    for leaf in optree.tree_leaves(batch, none_is_leaf=True):
        if isinstance(leaf, torch.Tensor) and leaf.ndim > 0:
            torch._dynamo.maybe_mark_dynamic(leaf, 0)


def _fresh_function(fn: Callable) -> Callable:
    """``fn`` (a bound method) with its own code object.

    Dynamo caches compiled graphs per code object, so every trainer's step would otherwise share
    one cache (and its recompile limit) with every other trainer's: one model per cache keeps
    each model's compiled step independent of how many others a process trains.
    """
    func = fn.__func__  # type: ignore[attr-defined]
    code = func.__code__.replace()
    fresh = type(func)(code, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    return fresh.__get__(fn.__self__)  # type: ignore[attr-defined]


def _rows(x: Any) -> int | None:
    """The batch's rows: the first axis of its first input (None for a scalar)."""
    leaves = optree.tree_leaves(x)
    return int(leaves[0].shape[0]) if leaves and getattr(leaves[0], "ndim", 0) else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _reason(error: BaseException) -> str:
    """Why a compile failed, in one line: the error and, for a backend's failure, the backend's own error."""
    inner = getattr(error, "inner_exception", None) or error.__cause__
    reason = _first_line(error)
    return reason if inner is None else f"{reason} {_first_line(inner)}"


class CompiledSteps:
    """The torch steps with ``train_step``/``fit_step`` under ``torch.compile`` (see the module docstring).

    A mixin in front of the eager torch steps (``ember.backends.torch.training``): evaluation and
    prediction stay eager; the training steps are pure.
    """

    fit_step_is_pure = True  # new tensors every step: the given state is never written
    core: Any  # the StepCore (set by the eager steps' __init__)
    sync: Any  # ember.distribute's StepSync (set by the Trainer), or None

    def __init__(self, core: Any) -> None:
        super().__init__(core)  # type: ignore[call-arg]  # the eager TorchSteps after this mixin
        self.compile_seconds: float | None = None  # the first (compiling) call's wall time
        self.fallback_reason: str | None = None  # why the step runs eagerly, once it does
        self.eager_batches = 0  # batches the compiled graph's guards refused (run eagerly)
        self._python_runs = 0  # pure_step's runs as Python (eagerly), not as the compiled graph
        self._compiled_rows: int | None = None  # the rows of the batch the graph was compiled for
        self._warned_refusal = False
        self._step_fn = _fresh_function(self.pure_step)
        self._compiled = torch.compile(self._step_fn, backend=_BACKEND, fullgraph=True)

    # --- state -------------------------------------------------------------------------------
    def rng(self, seed: int) -> Any:
        """The step seed as a 0-d int64 tensor on the device: new seeds do not recompile."""
        return torch.tensor(initial_rng(seed), dtype=torch.int64, device=DEVICE.torch)

    def own(self, state: dict, donated: frozenset = frozenset()) -> dict:
        """The state as it is (never written, so ``donated`` changes nothing; the step seed as a tensor):
        no copy at fit start."""
        rng = state["rng"]
        if not isinstance(rng, torch.Tensor):
            rng = self.rng_tensor(rng)
        return {"model": state["model"], "optimizer": state["optimizer"], "metrics": state["metrics"], "rng": rng}

    def release(self, model_state: dict) -> dict:
        return model_state

    @staticmethod
    def rng_tensor(rng: Any) -> torch.Tensor:
        """A step seed (an int, or an array from a checkpoint) as a 0-d int64 tensor on the device."""
        return torch.as_tensor(rng, dtype=torch.int64, device=DEVICE.torch).reshape(())

    # --- the step -------------------------------------------------------------------------------
    def pure_step(self, state: dict, x: Any, y: Any, sw: Any) -> dict:
        """One whole training step as a pure function (what ``torch.compile`` traces)."""
        if not torch.compiler.is_compiling():  # a constant False in the graph: counts only runs as Python
            self._python_runs += 1
        core = self.core
        model_state = state["model"]
        trainable, frozen = core.split(model_state["params"])
        buffers, rng = model_state["buffers"], state["rng"]
        scale = core.loss_scale_of(state["optimizer"])  # a LossScaleOptimizer's: an input of the graph

        def objective(values: dict) -> tuple:
            return core.objective(values, frozen, buffers, x, y, sw, rng, scale)

        grads, aux = torch.func.grad(objective, has_aux=True)(trainable)
        total, per_output, y_pred_flat, new_buffers = aux
        new_trainable, opt_state = core.optimizer.apply_gradients(grads, state["optimizer"], trainable)
        params = core.apply_constraints(core.merge(new_trainable, frozen))
        metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                "rng": advance_rng(rng)}

    def frozen_step(self, state: dict, x: Any, y: Any, sw: Any) -> dict:
        """The step of a model with nothing to train: the loss and metrics, no update (eager)."""
        core = self.core
        model_state = state["model"]
        trainable, frozen = core.split(model_state["params"])
        with torch.no_grad():
            _, aux = core.objective(trainable, frozen, model_state["buffers"], x, y, sw, state["rng"])
            total, per_output, y_pred_flat, new_buffers = aux
            metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        return {"model": {"params": model_state["params"], "buffers": new_buffers}, "optimizer": state["optimizer"],
                "metrics": metrics, "rng": advance_rng(state["rng"])}

    def fit_step(self, state: dict, batch: tuple) -> dict:
        """One step of ``fit`` (pure: the loop swaps the returned state in whole)."""
        if self.sync is not None:
            raise NotImplementedError(
                "jit_compile=True on torch does not run under ember.distribute yet (the compiled step has no "
                "all-reduce of the gradients); compile the model with jit_compile=False for data-parallel training")
        x, y, sw = batch
        state = self.own(state)
        core = self.core
        core.prepare_mask(state["model"]["params"])
        if not optree.tree_leaves(core.split(state["model"]["params"])[0]):
            return self.frozen_step(state, x, y, sw)
        # Label values are not read on the host inside a compiled step; dropout draws from the step seed tensor.
        with unchecked_values(), counter_draws():
            if self.fallback_reason is not None:
                return self._eager(state, x, y, sw)
            _mark_batch_dynamic((x, y, sw))
            if self.compile_seconds is not None:  # compiled: a batch its guards refuse runs eagerly
                before = self._python_runs
                with torch.compiler.set_stance("eager_on_recompile"):
                    new = self._compiled(state, x, y, sw)
                if self._python_runs != before:  # the guards refused the batch: the step ran as Python
                    self._note_refused_batch(state, x, y, sw)
                return new
            # One eager run first (pure: its result is dropped). Memo caches that a step's first run fills
            # (which layer classes take a mask, ...) are then full when Dynamo traces; traced empty, the
            # graph would guard on their emptiness and refuse every later step.
            self._eager(state, x, y, sw)
            start = time.perf_counter()
            self._compiled_rows = _rows(x)
            try:
                new = self._compiled(state, x, y, sw)
            except Exception as error:  # noqa: BLE001 - any compiler failure: the eager step decides
                return self._fall_back(error, state, x, y, sw)
            self.compile_seconds = time.perf_counter() - start
            return new

    def _note_refused_batch(self, state: dict, x: Any, y: Any, sw: Any) -> None:
        """Count a batch the compiled graph's guards refused; warn (once) when it has as many rows as the
        batch the graph was compiled for (a guard on something other than the batch size failed)."""
        self.eager_batches += 1
        if _rows(x) == self._compiled_rows and not self._warned_refusal:
            self._warned_refusal = True
            lines = self._refusal(state, x, y, sw).splitlines()
            guard = "; ".join(line.strip() for line in lines[1:4] or lines[:1])  # the guards, else the one line
            warnings.warn(
                f"jit_compile=True: a batch of {self._compiled_rows} rows, as many as the compiled train step's, "
                f"failed its guards and ran eagerly ({guard[:500]}); later such batches run eagerly too (an Ember "
                "bug if the model and the batch's dtypes did not change: please report it)",
                RuntimeWarning, stacklevel=4)

    def _refusal(self, state: dict, x: Any, y: Any, sw: Any) -> str:
        """torch's account of the guards that refuse this batch: the same call under the stance that raises
        on a recompile, which stops at the guards (nothing runs)."""
        try:
            with torch.compiler.set_stance("fail_on_recompile"):
                self._compiled(state, x, y, sw)
        except RuntimeError as refusal:
            return str(refusal)
        return "the guards passed on a second look"

    def _eager(self, state: dict, x: Any, y: Any, sw: Any) -> dict:
        with torch.enable_grad():
            return self._step_fn(state, x, y, sw)

    def _fall_back(self, error: Exception, state: dict, x: Any, y: Any, sw: Any) -> dict:
        """Run the step eagerly after a failed compile; warn and stay eager when that works."""
        new = self._eager(state, x, y, sw)  # the model's own error, if it has one, is raised here
        self.fallback_reason = _reason(error)
        warnings.warn(
            "jit_compile=True: torch.compile could not compile the train step as one graph "
            f"({self.fallback_reason[:500]}); training continues eagerly with the same step uncompiled "
            "(compile(jit_compile=False) gives the faster fused eager step)", RuntimeWarning, stacklevel=4)
        return new

    def train_step(self, state: dict, batch: tuple) -> dict:
        """The pure step (``Trainer.train_step``): compiled like ``fit``'s, the returned params detached."""
        new = self.fit_step(state, batch)
        new["model"] = {"params": optree.tree_map(_detach, new["model"]["params"]), "buffers": new["model"]["buffers"]}
        return new
