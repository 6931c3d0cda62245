"""Training machinery: losses, metrics, optimizers, schedules, callbacks, the trainer.

Everything is pure-functional at its core (state is a pytree of native arrays and
functions return new state), so a whole training step can be compiled (``mx.compile``)
or differentiated (torch autograd) as one function. Its ``losses``, ``metrics``, ``optimizers``,
``callbacks`` and ``data`` packages are the public namespaces ``ember.losses`` and so on themselves
(one module object each, see :mod:`ember._namespaces`).
"""

from ember.training import callbacks, data, losses, metrics  # noqa: F401
