"""``ember.ops.random``: filled with the active backend's functions (see :mod:`ember.backends._spec`).

Example:
    >>> from ember import ops
    >>> x = ops.random.uniform((2, 3), seed=0)
    >>> ops.shape(x), ops.dtype(x)
    ((2, 3), 'float32')
"""

from ember.ops import _select_on_first_use


def __getattr__(name: str):
    return _select_on_first_use("random", name)
