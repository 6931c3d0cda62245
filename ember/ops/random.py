"""``ember.ops.random``: filled with the active backend's functions (see :mod:`ember.ops._spec`)."""
