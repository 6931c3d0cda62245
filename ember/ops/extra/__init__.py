"""The ops written once over the op protocol (``ember.ops.extra``): every composed op has its home here.

Each function calls ``ember.ops`` at call time, so it runs on the active backend and, inside a
:class:`~ember.GradientTape`, is differentiated through the protocol ops it calls. Two kinds:

* The names of ``keras.ops`` that Ember builds from protocol ops instead of asking every
  backend for a native kernel: NumPy-compatible math and array helpers (:mod:`.math`,
  :mod:`.arrays`), host-side integer/index ops (:mod:`.host`), activations and other ``nn`` ops
  (:mod:`.nn`, :mod:`.ctc`), linear algebra (:mod:`.linalg`), window functions (:mod:`.windows`),
  eager control flow (:mod:`.control_flow`) and, for ``ember.random``, ``SeedGenerator`` with the
  gamma, beta and binomial distributions (:mod:`.distributions`). :mod:`ember.ops` binds every
  name listed in :data:`EXPORTS` at its top level and those of :data:`RANDOM_EXPORTS` in
  ``ember.ops.random``; :mod:`.forward` gives the top level its forwarders to ``nn``, ``linalg``
  and ``stats`` protocol ops.
* The composites of the protocol ops a backend may leave out (``_spec.COMPOSABLE``):
  ``nn.dense``, ``nn.lstm``, ``nn.gru`` (:mod:`.composites`, which also binds them:
  :func:`~ember.ops.extra.composites.bound_tables`), ``nn.dot_product_attention``
  (:mod:`.attention`), ``nn.layer_norm`` and ``nn.fused_batch_norm`` (:mod:`.normalization`).
  ``ember.ops.nn`` holds the composite only on a backend without a kernel of its own.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.relu(ops.convert_to_tensor([-1.0, 2.0]))).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from ember.ops.extra import (
    arrays,
    control_flow,
    ctc,
    distributions,
    host,
    linalg,
    math,
    nn,
    windows,
)

_MODULES = (math, arrays, host, nn, ctc, linalg, windows, control_flow)

EXPORTS = {name: getattr(module, name) for module in _MODULES for name in module.__all__}

# ``ember.random`` (``ember.ops.random``): Keras's SeedGenerator and distributions.
RANDOM_EXPORTS = {name: getattr(distributions, name) for name in distributions.__all__}
