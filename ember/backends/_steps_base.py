"""The type of the base the backends' training steps are mixed onto, for type checkers only.

Each backend's ``make_steps`` builds its step class at run time on the trainer's
``GenericSteps``, which comes in the ``StepKit`` the trainer hands over: the backends import
nothing above the op protocol (see the import contracts in ``pyproject.toml``). A type checker
cannot see that base, so the backends name this class as their base under ``TYPE_CHECKING``
(and ``object`` at run time). It declares what they use of ``GenericSteps``; keep the two in step.

Example:
    >>> from ember.backends._steps_base import GenericStepsBase
    >>> sorted(name for name in vars(GenericStepsBase) if not name.startswith("__"))
    ['finish_fit', 'predict_step', 'test_step', 'train_step']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class GenericStepsBase:
    """What the backends' step classes use of ``ember.training.steps.GenericSteps``."""

    core: Any  # the StepCore: model, optimizer, losses and metrics of the compiled model
    sync: Any  # the distributed step synchroniser, or None
    buffers: Any  # the StepBuffers of steps that update in place, or None

    def __init__(self, core: Any, value_and_grad: Callable, detach: Callable = ...) -> None:
        raise NotImplementedError("a declaration for type checkers: the base is the kit's GenericSteps")

    def finish_fit(self) -> None:
        raise NotImplementedError("a declaration for type checkers: the base is the kit's GenericSteps")

    def train_step(self, state: dict, batch: tuple) -> dict:
        raise NotImplementedError("a declaration for type checkers: the base is the kit's GenericSteps")

    def test_step(self, state: dict, batch: tuple) -> dict:
        raise NotImplementedError("a declaration for type checkers: the base is the kit's GenericSteps")

    def predict_step(self, state: dict, x: Any) -> Any:
        raise NotImplementedError("a declaration for type checkers: the base is the kit's GenericSteps")
