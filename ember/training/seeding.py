"""``set_random_seed``: one call that makes a program's randomness reproducible.

Example:
    >>> import numpy as np
    >>> from ember.utils import set_random_seed
    >>> set_random_seed(3); a = np.random.rand()
    >>> set_random_seed(3); bool(a == np.random.rand())
    True
"""

from __future__ import annotations

import random

import numpy as np

from ember import backends, initializers
from ember.ops import random as ember_random


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator, Ember's unseeded initializers and the global
    random stream of every installed backend (what ``fit`` draws dropout masks and shuffles from).

    Args:
        seed: a non-negative int.

    Raises:
        ValueError: ``seed`` is not a non-negative int.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"set_random_seed: seed must be a non-negative int, received {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    initializers.set_seed(seed)
    for name in backends.available():
        with backends.using_backend(name):
            ember_random.set_seed(seed)
