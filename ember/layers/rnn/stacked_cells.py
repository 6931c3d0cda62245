"""``StackedRNNCells``: several recurrent cells run one after the other at each time step."""

from __future__ import annotations

from typing import Any

from ember.initializers import derive_seed
from ember.layers.rnn.cell import RNNCell


class StackedRNNCells(RNNCell):
    """A cell made of ``cells``: at each step cell ``k`` reads cell ``k - 1``'s output; the states
    are every cell's states in order. ``RNN(StackedRNNCells([...]))`` equals stacking ``RNN``
    layers with ``return_sequences=True`` (one time loop instead of several).

    State: ``{"params": {cell.name: that cell's params, ...}}``.

    Args:
        cells: a non-empty list of RNN cells.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.StackedRNNCells([layers.LSTMCell(4), layers.GRUCell(3)])
        >>> cell.state_size, cell.output_size
        ((4, 4, 3), 3)
        >>> rnn = layers.RNN(cell)
        >>> y, _ = rnn.apply(rnn.build((None, 5, 2), seed=0), ops.ones((1, 5, 2)))
        >>> ops.shape(y)
        (1, 3)
    """

    cells: Any

    def __post_init__(self) -> None:
        super().__post_init__()
        cells = list(self.cells) if isinstance(self.cells, (list, tuple)) else None
        if not cells or any(not isinstance(c, RNNCell) for c in cells):
            raise ValueError(f"{self.name}: cells must be a non-empty list of RNN cells, received {self.cells!r}")
        if len({c.name for c in cells}) != len(cells):
            raise ValueError(f"{self.name}: the cells need distinct names, received {[c.name for c in cells]}")
        self._normalize("cells", cells)

    @property
    def state_size(self) -> tuple[int, ...]:
        return tuple(size for cell in self.cells for size in cell.state_sizes)

    @property
    def output_size(self) -> int:
        return self.cells[-1].output_size

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        batch, features = self.step_input_shape(input_shape)
        params, buffers = {}, {}
        for cell in self.cells:
            state = cell.build((batch, features), None if seed is None else derive_seed(seed, cell.name))
            params[cell.name] = state["params"]
            if state["buffers"]:
                buffers[cell.name] = state["buffers"]
            features = cell.output_size
        return self.make_state(params=params, buffers=buffers)

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        if timespan is not None:  # RNNCell's signature; a stack has no elapsed-time input (accepts_timespan)
            raise TypeError(f"{self.name}: StackedRNNCells.step takes no timespan, received {timespan!r}")
        new_states, start, x = [], 0, inputs
        for index, cell in enumerate(self.cells):
            count = len(cell.state_sizes)
            cell_rng = None if rng is None else derive_seed(rng, index)
            x, updated = cell.step(params[cell.name], x, list(states[start:start + count]), training=training,
                                   rng=cell_rng)
            new_states.extend(updated)
            start += count
        return x, new_states

    def regularization_losses(self, params: dict) -> list:
        return [loss for cell in self.cells for loss in cell.regularization_losses(params[cell.name])]
