"""``ember.callbacks``: the public callback namespace (re-exports :mod:`ember.training.callbacks`).

Example:
    >>> import ember
    >>> stop = ember.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)
    >>> stop.patience, stop.mode
    (3, 'min')
"""

from ember.training.callbacks import *  # noqa: F401,F403
from ember.training.callbacks import __all__  # noqa: F401
