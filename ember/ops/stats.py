"""``ember.ops.stats``: filled with the active backend's functions (see :mod:`ember.backends._spec`).

Besides its own ops (``mean``, ``var``, ``std``, ``median``, ``percentile``, ``quantile``,
``cov``, ``gaussian``) the namespace offers the core reductions and orderings under the
same names, as the same functions: ``max``, ``min``, ``sum``, ``cumsum``, ``argmax``,
``argmin``, ``sort``, ``argsort``.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.stats.sum([1.0, 2.0, 3.0]).item(), ops.stats.argsort([3.0, 1.0, 2.0]).tolist()
    (6.0, [1, 2, 0])
"""
from ember.ops import _select_on_first_use


def __getattr__(name: str):
    return _select_on_first_use("stats", name)
