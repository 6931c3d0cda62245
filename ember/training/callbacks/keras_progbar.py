"""``Progbar``: Keras's progress bar for custom loops, over Ember's bar.

As in Keras, each metric passed to :meth:`Progbar.update` is shown as its average over the
steps seen so far (weighted by the steps each update covers), except the
``stateful_metrics``, which are shown as given; dynamic redraws are throttled to one per
``interval`` seconds.

Example:
    >>> import io
    >>> from ember.utils import Progbar
    >>> out = io.StringIO()
    >>> bar = Progbar(4, verbose=2, output=out)
    >>> bar.update(2, values=[("loss", 1.0)])
    >>> bar.update(4, values=[("loss", 0.0)])
    >>> "loss: 0.5000" in out.getvalue()
    True
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ember.training.callbacks.progbar import Progbar as _BaseProgbar


class Progbar(_BaseProgbar):
    """A progress bar over ``target`` steps with Keras's running averages.

    Args:
        target: total number of steps, or None when unknown.
        width: characters of the bar.
        verbose: 0 silent, 1 bar, 2 one line when finished.
        interval: minimum seconds between two redraws of a dynamic bar.
        stateful_metrics: names of metrics shown as given instead of averaged.
        unit_name: the unit of the per-step time.
        output: a text stream (``sys.stdout`` by default). Ember extension.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = Progbar(2, verbose=2, stateful_metrics=["lr"], output=out)
        >>> bar.update(1, values=[("loss", 4.0), ("lr", 0.1)])
        >>> bar.add(1, values=[("loss", 2.0), ("lr", 0.05)])
        >>> "loss: 3.0000" in out.getvalue(), "lr: 0.0500" in out.getvalue()
        (True, True)
    """

    def __init__(self, target: int | None, width: int = 20, verbose: int = 1, interval: float = 0.05,
                 stateful_metrics: Iterable[str] | None = None, unit_name: str = "step", output: Any = None) -> None:
        if verbose not in (0, 1, 2):
            raise ValueError(f"Progbar: verbose must be 0, 1 or 2, received {verbose!r}")
        if target is not None and (isinstance(target, bool) or not isinstance(target, int) or target < 0):
            raise ValueError(f"Progbar: target must be a non-negative int or None, received {target!r}")
        super().__init__(target, width=width, verbose=verbose, unit_name=unit_name, output=output)
        self.interval = float(interval)
        self.stateful_metrics = set(stateful_metrics or ())
        self._sums: dict[str, list[float]] = {}
        self._order: list[str] = []
        self._seen = 0
        self._last_draw = 0.0

    def _averaged(self, current: int, values: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        steps = max(current - self._seen, 1)
        for name, value in values:
            if name not in self._order:
                self._order.append(name)
            if name in self.stateful_metrics:
                self._sums[name] = [value, 1]
            else:
                total, count = self._sums.get(name, [0.0, 0])
                self._sums[name] = [total + float(value) * steps, count + steps]
        self._seen = current
        return [(name, self._sums[name][0] / self._sums[name][1] if name not in self.stateful_metrics
                 else self._sums[name][0]) for name in self._order]

    def update(self, current: int, values: Iterable[tuple[str, Any]] | None = None,
               finalize: bool | None = None) -> None:
        """Advance to step ``current``, folding ``values`` (``(name, number)`` pairs) into the averages."""
        shown = self._averaged(current, values or ())
        if self.verbose == 0:
            return
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        now = time.monotonic()
        if not finalize and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        super().update(current, shown, finalize=finalize)

    def add(self, n: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Advance by ``n`` steps."""
        self.update(self._seen + n, values)
