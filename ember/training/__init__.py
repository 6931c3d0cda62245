"""Training machinery: losses, metrics, optimizers, schedules, callbacks, the trainer.

Everything is pure-functional at its core (state is a pytree of native arrays and
functions return new state), so a whole training step can be compiled (``mx.compile``)
or differentiated (torch autograd) as one function. The public namespaces are
re-exported as ``ember.losses``, ``ember.metrics``, ``ember.optimizers``, ...
"""

from ember.training import callbacks, data, losses, metrics  # noqa: F401
