"""Rematerialization on MLX: ``mx.checkpoint``, one recorded op for a tape.

``mx.checkpoint`` differentiates with respect to the arrays passed in; arrays the function
closes over are constants to it, so ``ember.remat`` passes every array leaf of the arguments
explicitly. While a ``GradientTape`` records, the call is recorded as one op (``"remat"``) whose
replay runs the checkpointed function, so the tape's ``mx.vjp`` sees the checkpoint.

Example:
    >>> import mlx.core as mx
    >>> from ember.backends.mlx.remat import call_remat
    >>> mx.grad(lambda a: call_remat(lambda b: (b * b).sum(), (a,)))(mx.ones(3)).tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx

from ember.recorded import calls


def call_remat(function: Callable, leaves: tuple) -> Any:
    """``function(*leaves)`` under ``mx.checkpoint`` (activations recomputed in the backward pass)."""

    def checkpointed(*arrays: Any) -> Any:
        return mx.checkpoint(function)(*arrays)

    return calls.recorder("remat", checkpointed, None, None)(*leaves)
