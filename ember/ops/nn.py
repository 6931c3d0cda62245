"""``ember.ops.nn``: filled with the active backend's functions (see :mod:`ember.ops._spec`)."""


def __getattr__(name: str):
    from ember.ops import _select_on_first_use

    return _select_on_first_use("nn", name)
