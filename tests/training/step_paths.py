"""Make ``fit`` take its copy path, for tests that compare it with the in-place write.

NumPy's and torch's ``fit`` write an ``SGD``/``Adam``/``AdamW`` update into their own arrays under
held signals; every other update (constraints, other optimizers, ``train_step``) goes into new
arrays and never writes the given ones. :func:`force_copy_path` sends every step of ``fit`` there.
"""

from __future__ import annotations

import importlib


def force_copy_path(monkeypatch, backend: str) -> list:
    """Route fit's steps on ``backend`` ("numpy" or "torch") through the copy path for the rest of the
    test; returns a list that gets one entry per step so routed."""
    training = importlib.import_module(f"ember.backends.{backend}.training")
    steps = training.NumpySteps if backend == "numpy" else training.TorchSteps
    step = steps._step
    routed = []

    def copy_path(self, state, batch, owned):
        routed.append(owned)
        return step(self, state, batch, False)

    monkeypatch.setattr(steps, "_step", copy_path)
    return routed
