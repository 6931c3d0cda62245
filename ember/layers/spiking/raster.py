"""Reading spike trains: the spike events of a ``(batch, time, neurons)`` train as rows.

``RNN(spiking_cell, return_sequences=True)`` (or a spiking layer with
``return_sequences=True``) gives the spike train; :func:`spike_times` lists its events,
which is what raster plots and causal records (which spike came when) read.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers.spiking.raster import spike_times
    >>> ember.set_backend("numpy")
    >>> train = ops.convert_to_tensor([[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]])
    >>> spike_times(train).tolist()
    [[0, 0, 1], [0, 1, 0], [0, 2, 1]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops


def spike_times(spikes: Any) -> np.ndarray:
    """``(events, 3)`` int64 rows ``(batch, step, neuron)`` of every non-zero entry of ``spikes``
    ``(batch, time, neurons)``, ordered by step, then batch, then neuron.

    Raises:
        ValueError: ``spikes`` is not 3-D.
    """
    train = np.asarray(ops.to_numpy(spikes))
    if train.ndim != 3:
        raise ValueError(f"spike_times: expected a spike train (batch, time, neurons), received shape {train.shape}")
    events = np.argwhere(train != 0).astype(np.int64)
    order = np.lexsort((events[:, 2], events[:, 0], events[:, 1]))
    return events[order]
