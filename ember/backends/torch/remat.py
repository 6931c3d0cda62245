"""Rematerialization on torch: ``torch.utils.checkpoint.checkpoint`` (non-reentrant).

The forward runs without keeping its intermediate activations; the backward runs it again
(with the RNG state of the first run, so dropout draws the same mask) and differentiates that.
Tensors the function closes over (a layer's weights) get their gradients too: the
non-reentrant checkpoint tracks every tensor the recomputation uses.

Example:
    >>> import torch
    >>> from ember.backends.torch.remat import call_remat
    >>> x = torch.ones(3, requires_grad=True)
    >>> call_remat(lambda a: (a * a).sum(), (x,)).backward()
    >>> x.grad.tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils.checkpoint


def call_remat(function: Callable, leaves: tuple) -> Any:
    """``function(*leaves)``, its activations recomputed in the backward pass instead of kept."""
    if not torch.is_grad_enabled():
        return function(*leaves)  # nothing will be differentiated: nothing to save
    # Ember's random layers draw from explicit seeds (the rng of apply), never torch's global
    # generator: the recomputation draws the same values without torch saving and restoring its
    # RNG state, and the recomputed tensors need no metadata check (the function is pure).
    return torch.utils.checkpoint.checkpoint(function, *leaves, use_reentrant=False, preserve_rng_state=False,
                                             determinism_check="none")
