"""``ember.optimizers``: the public optimizer namespace (see :mod:`ember.training.optimizers`).

``ember.optimizers.schedules`` holds the learning rate schedules; ``import
ember.optimizers.schedules`` and ``from ember.optimizers.schedules import CosineDecay`` work too.

Example:
    >>> import ember
    >>> from ember import optimizers
    >>> opt = optimizers.AdamW(learning_rate=optimizers.schedules.CosineDecay(1e-3, decay_steps=1000))
    >>> opt.get_config()["learning_rate"]["class_name"]
    'ember>CosineDecay'
"""

from __future__ import annotations

import sys

from ember.training.optimizers import *  # noqa: F401,F403
from ember.training.optimizers import __all__, schedules  # noqa: F401  (re-exported)

sys.modules[__name__ + ".schedules"] = schedules
