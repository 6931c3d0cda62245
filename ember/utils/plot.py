"""``plot_history``: a PNG of a training run's loss and metrics per epoch, train vs validation.

matplotlib is an optional extra (``pip install "ember[plot]"``). The figure is drawn with
matplotlib's object API on its own ``Figure`` (no ``pyplot`` state, no window, nothing
left open), so it is safe in scripts, tests and headless servers.

Example:
    >>> import pathlib, tempfile
    >>> from ember.utils import plot_history
    >>> logs = {"loss": [1.0, 0.6, 0.4], "val_loss": [1.1, 0.8, 0.7], "accuracy": [0.5, 0.8, 0.9]}
    >>> path = plot_history(logs, pathlib.Path(tempfile.mkdtemp()) / "history.png")
    >>> path.suffix, path.stat().st_size > 0
    ('.png', True)
"""

from __future__ import annotations

import math
import os
import pathlib
from typing import Any

VALIDATION_PREFIX = "val_"
MAX_COLUMNS = 3  # panels per row; more metrics wrap onto further rows


def history_logs(history: Any) -> dict[str, list[float]]:
    """The ``{name: [value per epoch]}`` dict of a ``History`` or of such a dict, validated."""
    logs = getattr(history, "history", history)
    if not isinstance(logs, dict):
        raise TypeError(f"plot_history: history must be a History (what fit returns) or a dict of "
                        f"lists, received {type(history).__name__}")
    if not logs or not any(len(values) for values in logs.values()):
        raise ValueError("plot_history: the history is empty (was fit run with epochs >= 1?)")
    clean = {}
    for name, values in logs.items():
        try:
            clean[str(name)] = [float(v) if v is not None else math.nan for v in values]
        except (TypeError, ValueError):
            raise TypeError(f"plot_history: history[{name!r}] must be a list of numbers, "
                            f"received {values!r}") from None
    return clean


def panels(logs: dict[str, list[float]]) -> list[tuple[str, list[float] | None, list[float] | None]]:
    """``(metric, train values, validation values)`` per panel: loss first, then the others in order.

    Example:
        >>> [p[0] for p in panels({"accuracy": [1.0], "val_loss": [2.0], "loss": [3.0]})]
        ['loss', 'accuracy']
    """
    names = []
    for name in logs:
        base = name[len(VALIDATION_PREFIX):] if name.startswith(VALIDATION_PREFIX) else name
        if base not in names:
            names.append(base)
    names.sort(key=lambda n: n != "loss")  # stable: loss first, the rest as logged
    return [(n, logs.get(n), logs.get(VALIDATION_PREFIX + n)) for n in names]


def epoch_axis(values: list[float], epochs: int) -> list[float]:
    """x positions (1-based epochs) of a series; a shorter one (``validation_freq``) is spread evenly."""
    count = len(values)
    if count == epochs:
        return list(range(1, epochs + 1))
    step = epochs / count
    return [step * (i + 1) for i in range(count)]


def plot_history(history: Any, path: str | os.PathLike, *, title: str | None = None) -> pathlib.Path:
    """Write loss and every metric per epoch (train solid, validation dashed) to an image file.

    Args:
        history: the ``History`` that ``model.fit`` returns, or its ``.history`` dict
            (``{"loss": [...], "val_loss": [...], "accuracy": [...]}``).
        path: the image to write; the format follows the suffix (``.png``, ``.svg``, ``.pdf``).
        title: a title over the panels.

    Returns:
        The path written, as a ``pathlib.Path``.

    Raises:
        ImportError: matplotlib is not installed (``pip install "ember[plot]"``).
        TypeError, ValueError: ``history`` is not a History/dict of numbers, or is empty.

    Example:
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, validation_split=0.25, verbose=0)
        >>> plot_history(history, pathlib.Path(tempfile.mkdtemp()) / "fit.png").exists()
        True
    """
    logs = history_logs(history)
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ImportError('plot_history needs matplotlib: pip install "ember[plot]"') from None
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"plot_history: the directory {str(path.parent)!r} does not exist")
    rows = panels(logs)
    epochs = max(len(values) for values in logs.values())
    columns = min(len(rows), MAX_COLUMNS)
    lines = math.ceil(len(rows) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.4 * lines), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False).reshape(-1)
    for ax in axes[len(rows):]:
        ax.set_visible(False)
    for ax, (name, train, validation) in zip(axes, rows):
        if train:
            ax.plot(epoch_axis(train, epochs), train, "-o", markersize=3, label="train")
        if validation:
            ax.plot(epoch_axis(validation, epochs), validation, "--o", markersize=3, label="validation")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        figure.suptitle(title)
    figure.savefig(path, dpi=110)
    return path
