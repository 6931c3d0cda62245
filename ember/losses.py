"""``ember.losses``: the public loss namespace (re-exports :mod:`ember.training.losses`).

Example:
    >>> import ember
    >>> ember.set_backend("numpy")
    >>> float(ember.losses.MeanAbsoluteError()([[1.0], [3.0]], [[2.0], [3.0]]))
    0.5
"""

from ember.training.losses import *  # noqa: F401,F403
from ember.training.losses import __all__  # noqa: F401
