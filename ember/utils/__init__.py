"""Utilities around training: plots of a ``History`` (matplotlib, the ``[plot]`` extra).

``plot_history(history, path)`` writes loss and metrics per epoch, train vs validation.
The wiring plot lives with the wirings: ``ember.wirings.AutoNCP(...).draw()``.
"""

from ember.utils.plot import plot_history

__all__ = ["plot_history"]
