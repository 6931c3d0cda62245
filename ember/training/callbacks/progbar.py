"""``Progbar``: the text progress bar ``ProgbarLogger`` draws.

On a terminal the bar is redrawn in place (carriage return); elsewhere (a log file, a
pipe, CI) only the final line of each bar is written, so logs are not flooded.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable
from typing import Any


def format_value(value: Any) -> str:
    """Keras's number formatting in progress lines."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if number != number or abs(number) > 1e-3 or number == 0.0:
        return f"{number:.4f}"
    return f"{number:.4e}"


def format_duration(seconds: float) -> str:
    """``"2s"``, ``"1:05"``, ``"1:02:03"`` as Keras writes ETAs and epoch times."""
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}:{(seconds % 3600) // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def format_step_time(seconds: float, unit: str = "step") -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


class Progbar:
    """A progress bar over ``target`` steps (``None``: unknown length).

    Args:
        target: total number of steps, or None.
        width: characters of the bar itself.
        verbose: 1 draws the bar; 2 writes one summary line when finalized.
        unit_name: the unit of the per-step time (``"step"``).
        output: where to write (``sys.stdout`` when None, looked up at each write).
        dynamic: redraw in place; defaults to whether ``output`` is a terminal.

    Example:
        >>> import io
        >>> from ember.training.callbacks.progbar import Progbar
        >>> out = io.StringIO()
        >>> bar = Progbar(target=4, output=out, dynamic=False)
        >>> bar.update(4, [("loss", 0.25)], finalize=True)
        >>> out.getvalue().startswith("4/4 [")
        True
        >>> "loss: 0.2500" in out.getvalue()
        True
    """

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1, unit_name: str = "step",
                 output: Any = None, dynamic: bool | None = None) -> None:
        self.target = target
        self.width = width
        self.verbose = verbose
        self.unit_name = unit_name
        self._output = output
        stream = self.output
        self.dynamic = dynamic if dynamic is not None else bool(getattr(stream, "isatty", lambda: False)())
        self._start = time.monotonic()
        self._last_length = 0

    @property
    def output(self) -> Any:
        return self._output if self._output is not None else sys.stdout

    def update(self, current: int, values: Iterable[tuple[str, Any]] = (), finalize: bool | None = None) -> None:
        """Show progress ``current`` with ``values`` (``(name, number)`` pairs)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        if not finalize and not (self.verbose == 1 and self.dynamic):
            return
        elapsed = time.monotonic() - self._start
        per_step = elapsed / current if current else 0.0
        metrics = "".join(f" - {name}: {format_value(value)}" for name, value in values)
        if self.verbose == 2:
            line = f"{current}/{self.target if self.target is not None else current} - {format_duration(elapsed)}"
            line += f" - {format_step_time(per_step, self.unit_name)}{metrics}"
            self.output.write(line + "\n")
            self.output.flush()
            return
        target = self.target if self.target is not None else (current if finalize else None)
        if target:
            digits = len(str(target))
            done = int(self.width * min(current, target) / target)
            bar = "=" * done
            if current < target:
                bar = (bar[:-1] if bar else "") + ">"
            text = f"{current:>{digits}}/{target} [{bar:<{self.width}}]"
        else:
            text = f"{current}/Unknown"
        if finalize:
            text += f" - {format_duration(elapsed)} {format_step_time(per_step, self.unit_name)}"
        else:
            eta = per_step * (target - current) if target else None
            text += (f" - ETA: {format_duration(eta)}" if eta is not None else "") + \
                f" - {format_step_time(per_step, self.unit_name)}"
        text += metrics
        if self.dynamic:
            padding = max(0, self._last_length - len(text))
            self.output.write("\r" + text + " " * padding)
            self._last_length = len(text)
        else:
            self.output.write(text)
        if finalize:
            self.output.write("\n")
        self.output.flush()


class LoggingStream:
    """A text stream that sends each finished line to the ``"ember"`` logger (``logging.info``): the
    progress bar's output when interactive logging is off (``ember.config.disable_interactive_logging``).
    Not a terminal, so the bar writes finished lines only."""

    def __init__(self) -> None:
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line.strip():
                logging.getLogger("ember").info(line.strip("\r"))
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered beyond the unfinished line."""

    def isatty(self) -> bool:
        return False
