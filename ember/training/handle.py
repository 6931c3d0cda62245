"""``TrainingHandle``: what a compiled model keeps between ``compile``, ``fit`` and the batch methods.

A model holds one handle in ``model._training`` (an empty one before ``compile``). The training
API, the fit loop, the backend switch (``backend_check``) and the checkpoint code (``ember.saving``,
which reads the fields by name without importing this module) share it.

Example:
    >>> from ember.training.handle import TrainingHandle
    >>> handle = TrainingHandle()
    >>> handle.compiled, handle.opt_state is None
    (False, True)
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class TrainingHandle:
    """The training caches of one model.

    Attributes:
        trainer: the ``Trainer`` built by ``compile`` (None before).
        compile_config: the arguments ``compile`` was called with (saved by ``model.save``).
        predict_trainer: a loss-less trainer ``predict`` builds for an uncompiled model.
        opt_state: the optimizer state kept from the last ``fit``/``train_on_batch``.
        opt_spec: the tree structure of the trainable params ``opt_state`` belongs to (a state
            for another structure is dropped).
        train_metrics: running metric state of ``train_on_batch`` since ``reset_metrics``.
        test_metrics: running metric state of ``test_on_batch`` since ``reset_metrics``.
        batch_rng: the step RNG ``train_on_batch`` continues from.
        live_state: the running fit loop (set only while ``fit`` runs: callbacks read it).
        last_fit: ``{"seed", "rng", "epoch"}`` of the last ``fit`` (saved with the checkpoint).
        resume: ``{"seed", "rng", "epoch"}`` set by ``load_model``, consumed by the next ``fit``.
        step_metrics: the loss tracker and compiled metrics ``model.metrics`` reports (stateful
            objects used by overriding ``train_step``/``test_step``; made on first use).
    """

    trainer: Any = None
    compile_config: dict | None = None
    predict_trainer: Any = None
    opt_state: Any = None
    opt_spec: Any = None
    train_metrics: Any = None
    test_metrics: Any = None
    batch_rng: Any = None
    live_state: Any = None
    last_fit: dict | None = None
    resume: dict | None = None
    step_metrics: Any = None

    def current_opt_state(self) -> Any:
        """The optimizer state of the last step: the running ``fit``'s, else the one kept on the handle
        (None before any step). Its ``iterations`` is what ``model.optimizer.iterations`` reports.

        Example:
            >>> TrainingHandle(opt_state={"iterations": 3}).current_opt_state()["iterations"]
            3
        """
        live = self.live_state
        return self.opt_state if live is None else live.state["optimizer"]

    @property
    def compiled(self) -> bool:
        """Whether ``compile`` has given this handle a trainer."""
        return self.trainer is not None

    def copy(self) -> TrainingHandle:
        """A shallow copy (the caches are replaced, never mutated, so this is a full snapshot)."""
        return dataclasses.replace(self)
