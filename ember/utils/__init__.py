"""Utilities around training: plots of a ``History`` (matplotlib, the ``[plot]`` extra).

``plot_history(history, path)`` writes loss and metrics per epoch, train vs validation.
The wiring plot lives with the wirings: ``ember.wirings.AutoNCP(...).draw()``.

Example:
    >>> from ember import utils
    >>> callable(utils.plot_history)
    True
"""

from ember.utils.plot import plot_history

__all__ = ["plot_history"]
