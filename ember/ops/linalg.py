"""``ember.ops.linalg``: filled with the active backend's functions (see :mod:`ember.backends._spec`).

Keras's ``keras.ops.linalg`` names whose Ember op lives in :mod:`ember.ops` itself are read from
there when asked for here.
"""
import sys as _sys

from ember.ops import _select_on_first_use

# Keras's keras.ops.linalg names whose Ember op lives in ember.ops (one definition, two paths).
FROM_CORE = frozenset({"cholesky_inverse", "lu_factor", "matrix_rank", "solve_triangular"})


def __getattr__(name: str):
    if name in FROM_CORE:
        return getattr(_sys.modules["ember.ops"], name)
    return _select_on_first_use("linalg", name)
