"""A model's inference forward as an MLX function file (``mx.exporter``).

``ember.models.export`` (``Model.export(..., format="mlx")``) hands this module a pure forward
function of the flat inputs (the weights, MLX arrays, captured as constants) and one tuple of sample
inputs per trace. :func:`save_traces` writes one trace per tuple into one file with ``mx.exporter``
(the imported function picks the trace whose input shapes match and refuses other shapes); MLX
alone reads it back with ``mx.import_function(path)``, whose function returns a tuple of arrays.

``shapeless=True`` writes one trace meant for any input shape. MLX documents that such a trace is
valid only where the graph does not depend on the traced shape, and Ember's ops compute shapes in
Python (MLX's own ``addmm``, under ``Dense``, broadcasts its bias to the traced batch size): the
caller checks a shapeless file at another batch size (:func:`imported_outputs`).

Example:
    >>> import os, tempfile
    >>> import mlx.core as mx
    >>> from ember.backends.mlx.export import imported_outputs, save_traces
    >>> path = os.path.join(tempfile.mkdtemp(), "double.mlxfn")
    >>> save_traces(path, lambda x: (2 * x,), [(mx.ones((1, 3)),), (mx.ones((5, 3)),)])
    >>> imported_outputs(path, (mx.ones((5, 3)),))[0].shape
    (5, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx


def save_traces(filepath: str, forward: Callable[..., Any], sample_sets: Sequence[Sequence[Any]],
                shapeless: bool = False, metadata: str | None = None) -> None:
    """Export ``forward`` traced on each tuple of ``sample_sets`` into one file at ``filepath``."""
    extra = {} if metadata is None else {"metadata": metadata}
    with mx.exporter(filepath, forward, shapeless=shapeless, **extra) as exporter:
        for samples in sample_sets:
            exporter(*samples)


def imported_outputs(filepath: str, inputs: Sequence[Any]) -> tuple:
    """The outputs of the function file at ``filepath`` on ``inputs`` (``mx.import_function``), evaluated."""
    function: Any = mx.import_function(filepath)
    outputs = tuple(function(*inputs))
    mx.eval(*outputs)
    return outputs
