"""``ember.metrics``: the public metric namespace (re-exports :mod:`ember.training.metrics`).

Example:
    >>> import ember
    >>> ember.set_backend("numpy")
    >>> float(ember.metrics.Accuracy()([1, 2], [1, 0]))
    0.5
"""

from ember.training.metrics import *  # noqa: F401,F403
from ember.training.metrics import __all__  # noqa: F401
