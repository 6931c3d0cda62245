"""NumPy floating-point errors of an in-place write, reported once the write is complete.

NumPy reports a floating-point error of a ufunc (overflow, an invalid value...) as its error
state says: a ``RuntimeWarning`` by default, a ``FloatingPointError`` under
``np.seterr(all="raise")``, a call of the function given to ``np.seterrcall``. A warning is shown
by Python code (``warnings.showwarning``) and may be turned into an exception by a warnings
filter; raised between two arrays of a step written in place, either would leave a *torn* state
(some arrays a step ahead of others).

So, while such a write runs, :meth:`DeferredFloatErrors.defer` sets NumPy's error state to
``"log"`` into an ``io.StringIO``, whose ``write`` is a C function (nothing else runs); once the
write is complete :meth:`DeferredFloatErrors.restore` puts the caller's error state back and
returns the logged errors, and :meth:`DeferredFloatErrors.report` raises, warns, prints or calls
for them as that error state asks, the way NumPy would have, only after the step.

Example:
    >>> import numpy as np
    >>> errors = DeferredFloatErrors()
    >>> a = np.array([3e38], np.float32)
    >>> errors.defer()
    >>> _ = np.multiply(a, np.float32(10.0), out=a)   # overflows: logged, nothing raised
    >>> logged = errors.restore()
    >>> logged
    ['overflow encountered in multiply']
    >>> with np.errstate(over="raise"):
    ...     try:
    ...         errors.report(logged)
    ...     except FloatingPointError as error:
    ...         print(error)
    overflow encountered in multiply
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np

# The error kinds as NumPy's messages name them, with their key in np.geterr() and their flag
# for an np.seterrcall function.
_KINDS = (("divide by zero", "divide", 1), ("overflow", "over", 2), ("underflow", "under", 4),
          ("invalid value", "invalid", 8))
_PREFIX = "Warning: "  # NumPy's "log" lines: "Warning: <kind> encountered in <ufunc>"


def _kind_of(message: str) -> tuple[str, int]:
    """The ``np.geterr()`` key and the ``np.seterrcall`` flag of one of NumPy's error messages."""
    for kind, key, flag in _KINDS:
        if message.startswith(kind):
            return key, flag
    return "invalid", 8


class DeferredFloatErrors:
    """NumPy's error state switched to a log during a write (see the module docstring)."""

    def __init__(self) -> None:
        self._log = io.StringIO()
        self._saved: tuple | None = None  # the caller's (np.geterr(), np.geterrcall()) while deferred

    def defer(self) -> None:
        """Log every floating-point error from now on (until :meth:`restore`)."""
        if self._saved is None:
            self._saved = (np.geterr(), np.geterrcall())
        np.seterrcall(self._log)
        np.seterr(all="log")

    def restore(self) -> list[str]:
        """Put the caller's error state back; the errors logged since :meth:`defer`, each once, in order."""
        saved = self._saved
        if saved is not None:  # cleared only once put back: an interrupted restore is finished by the next one
            np.seterr(**saved[0])
            np.seterrcall(saved[1])
            self._saved = None
        text = self._log.getvalue()
        if not text:
            return []
        self._log.seek(0)
        self._log.truncate()
        messages = [line[len(_PREFIX):] if line.startswith(_PREFIX) else line for line in text.splitlines()]
        return list(dict.fromkeys(messages))

    @staticmethod
    def report(messages: list[str]) -> None:
        """Handle ``messages`` (from :meth:`restore`) as NumPy's current error state asks.

        Raises:
            FloatingPointError: for the first message whose kind is set to ``"raise"``.
        """
        if not messages:
            return
        modes: dict[str, str] = {key: str(mode) for key, mode in np.geterr().items()}
        call: Any = np.geterrcall()  # a function (mode "call") or an object with ``write`` (mode "log")
        for message in messages:
            key, flag = _kind_of(message)
            mode = modes[key]
            if mode == "raise":
                raise FloatingPointError(message)
            if mode == "warn":
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            elif mode == "print":
                print(_PREFIX + message)
            elif mode == "call" and call is not None:
                call(message.split(" encountered")[0], flag)
            elif mode == "log" and call is not None:
                call.write(_PREFIX + message + "\n")
