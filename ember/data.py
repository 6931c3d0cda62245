"""``ember.data``: the public data namespace (re-exports :mod:`ember.training.data`).

Example:
    >>> import ember
    >>> issubclass(ember.data.Dataset, object)
    True
"""

from ember.training.data import *  # noqa: F401,F403
from ember.training.data import __all__  # noqa: F401
