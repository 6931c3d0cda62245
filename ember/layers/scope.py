"""Frames: where a Keras-style layer's variables and sub-layers find their state.

While a Keras-style layer initialises (``build``) or runs (``apply``), a :class:`Frame`
holding its state sits on a stack, as Haiku/Flax-linen resolve parameters from the state
passed to a pure apply. ``self.kernel`` (an :class:`ember.Variable`) reads the innermost
frame of its layer; ``self.dense(x)`` (a sub-layer called inside ``call``) builds or
reads its entry in the frame under the attribute name that holds it. Nothing is stored
on the layer objects: a frame lives only while its ``build``/``apply`` runs.

Example:
    >>> from ember.layers.scope import Frame, frame_of, frames
    >>> owner = object()
    >>> with frames(Frame("apply", owner, {"params": {}, "buffers": {}})):
    ...     frame_of(owner) is not None
    True
    >>> frame_of(owner) is None
    True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


class Frame:
    """The state of one layer while it initialises (``mode="init"``) or runs (``mode="apply"``).

    Attributes:
        mode: ``"init"`` (variables and sub-layer states are created) or ``"apply"``.
        layer: the layer whose ``build``/``call`` runs.
        state: ``{"params": {...}, "buffers": {...}}``; the buffers dict is this frame's
            own copy (updates made in ``call`` land there and ``apply`` returns them).
        seed: the build seed (init mode).
        rng: the call's seed for randomness (apply mode).
        training: the call's training flag.
    """

    __slots__ = ("built_children", "layer", "mode", "rng", "seed", "state", "training")

    def __init__(self, mode: str, layer: Any, state: dict, seed: Any = None, rng: Any = None,
                 training: bool = False) -> None:
        self.mode = mode
        self.layer = layer
        self.state = {"params": dict(state["params"]), "buffers": dict(state["buffers"])}
        self.seed = seed
        self.rng = rng
        self.training = training
        self.built_children: set = set()


_local = threading.local()


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def frames(frame: Frame) -> Iterator[Frame]:
    """Push ``frame`` for the duration of the block."""
    stack = _stack()
    stack.append(frame)
    try:
        yield frame
    finally:
        stack.pop()


def top() -> Frame | None:
    """The innermost frame, or None outside any Keras-style build/apply."""
    stack = _stack()
    return stack[-1] if stack else None


def frame_of(layer: Any) -> Frame | None:
    """The innermost frame of ``layer`` (None when it is neither building nor running)."""
    for frame in reversed(_stack()):
        if frame.layer is layer:
            return frame
    return None


def is_building(layer: Any) -> bool:
    """Whether ``layer``'s ``build`` runs now (attributes may then be set on it)."""
    frame = frame_of(layer)
    return frame is not None and frame.mode == "init"
