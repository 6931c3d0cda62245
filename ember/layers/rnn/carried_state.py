"""The carried states of a ``stateful=True`` RNN: buffers of the model's state, never arrays on the layer.

With ``stateful=True`` the final states of one call are the initial states of the next (Keras's
semantics: sample ``i`` of a batch continues sample ``i`` of the previous batch). Ember layers
hold no arrays, so the states live where BatchNorm's moving statistics do: in the layer's
``buffers``, one ``(batch, size)`` array per state leaf, named ``rnn_state_0``,
``rnn_state_1``, ... ``apply`` reads them and returns the new ones in its state, so
``model(x)``, ``fit`` and ``predict`` carry them from batch to batch; ``RNN.reset_states()``
(Keras's ``reset_state``) writes the initial states back into the owner's state. They are not
weights: ``layer.weights`` and ``get_weights`` leave them out, as Keras does (and Keras's
``.keras``/``.weights.h5`` files hold none; Ember's ``.h5`` checkpoints keep them). Validation
inside ``fit`` starts from the training's carried states and leaves them as they were.

The batch size is fixed by the build shape (``ember.Input(shape, batch_size=N)``); built with
an unknown batch size, the buffers start empty (``(0, size)``) and the first call fixes it.
Any later batch size must be that one: a ValueError names both.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> rnn = layers.SimpleRNN(2, stateful=True, kernel_initializer="ones", recurrent_initializer="zeros")
    >>> state = rnn.build((3, 4, 1), seed=0)
    >>> sorted(state["buffers"]), ops.shape(state["buffers"]["rnn_state_0"])
    (['rnn_state_0'], (3, 2))
"""

from __future__ import annotations

from typing import Any

from ember import ops

PREFIX = "rnn_state"


def buffer_names(count: int) -> list[str]:
    """The buffer names of ``count`` carried state arrays."""
    return [f"{PREFIX}_{i}" for i in range(count)]


def create(layer_name: str, cell_state: dict, sizes: tuple, batch: int | None, dtype: str) -> dict:
    """``cell_state`` plus the carried states (zeros; ``(0, size)`` while the batch size is unknown)."""
    names = buffer_names(len(sizes))
    clash = [name for name in names if name in cell_state["buffers"]]
    if clash:
        raise ValueError(f"layer {layer_name!r}: the cell has buffers named {clash}, the names of a stateful "
                         f"RNN's carried states")
    rows = 0 if batch is None else batch
    buffers = dict(cell_state["buffers"])
    buffers.update({name: ops.zeros((rows, size), dtype=dtype) for name, size in zip(names, sizes)})
    return {"params": cell_state["params"], "buffers": buffers}


def read(layer_name: str, buffers: dict, count: int, batch: int) -> list | None:
    """The carried states for inputs of ``batch`` rows; None while no batch size is fixed yet."""
    names = buffer_names(count)
    missing = [name for name in names if name not in buffers]
    if missing:
        raise ValueError(f"layer {layer_name!r} is stateful but its state has no {missing} buffers: build it "
                         f"again (a state built with stateful=False has none)")
    states = [buffers[name] for name in names]
    built = ops.shape(states[0])[0]
    if built == 0:
        return None
    if built != batch:
        raise ValueError(f"layer {layer_name!r} is stateful with batch size {built} (its carried states), "
                         f"received inputs with batch size {batch}: feed batches of {built} samples (the last "
                         f"batch too)")
    return states


def write(buffers: dict, states: list) -> dict:
    """``buffers`` with the carried states replaced (no gradient flows into the next call)."""
    new = dict(buffers)
    for name, value in zip(buffer_names(len(states)), states):
        new[name] = ops.stop_gradient(value)
    return new


def strip(buffers: dict, count: int) -> dict:
    """``buffers`` without the carried states (what the cell's own computation sees)."""
    names = set(buffer_names(count))
    return {k: v for k, v in buffers.items() if k not in names}


def carries_state(layer: Any) -> bool:
    """Whether ``layer`` or a layer inside it is a stateful RNN (its calls update carried states)."""
    if getattr(layer, "stateful", False) is True and hasattr(layer, "carried_buffers"):
        return True
    return any(carries_state(child) for child in layer._state_children().values())
