"""``ember.ops.random``: filled with the active backend's functions (see :mod:`ember.backends._spec`)."""
from ember.ops import _select_on_first_use


def __getattr__(name: str):
    return _select_on_first_use("random", name)
