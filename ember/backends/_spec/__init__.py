"""The op protocol: every backend implements exactly these functions.

Each stub fixes an op's name, signature (argument names and defaults) and semantics;
the stubs live in one module per namespace (``core``, ``linalg``, ``stats``, ``nn``,
``random``). Backends live in ``ember/backends/<name>/{core,linalg,nn,stats,random}.py``
and must define a function of the same name and the same parameters for every
stub in the matching namespace; ``tests/backends/test_protocol.py`` enforces it
and :mod:`ember.ops` copies these docstrings onto the backend functions.

Conventions shared by every op:

* Inputs are native arrays of the active backend, ``ember.Tensor``s of the active
  backend, NumPy arrays, Python scalars or nested lists. A native array or Tensor of
  a *different* framework backend is a ``TypeError`` that names both backends and
  says how to convert (``ember.convert_to_tensor`` / ``Tensor.to_backend``).
* Outputs are native arrays of the active backend on its default device (or on
  the device of the inputs).
* NumPy is the reference for semantics: broadcasting, negative axes, ``axis`` given
  as an int or a tuple, ``keepdims``, empty arrays.
* Result dtypes follow :mod:`ember.dtypes` (same on every backend; Python scalars
  are weak). A Python int out of the range of the integer dtype it takes
  (``add(int8_array, 300)``, ``add(uint8_array, -1)``, ``full_like(int8_array, 300)``)
  is an ``OverflowError``, as in NumPy 2 and JAX. ``tests/ops/test_dtype_agreement.py`` checks every backend
  agrees. Reductions keep the input dtype (``sum`` of ``bool``/small ints gives
  ``int32``; ``mean``/``var``/``std`` of integers give ``floatx()``). Index outputs
  (``argmax``, ``argsort``, ``top_k`` indices, ``nonzero``) are ``int32``.
* ``dtype=None`` on a creation op means ``floatx()`` for floating data and
  ``int32`` for integer data (``arange(3)`` is ``int32``, ``arange(0.5, 3)`` is float).
* An invalid axis raises ``ValueError`` naming the argument, the axis and the rank.
"""

from __future__ import annotations

from ember.backends._spec.core import core
from ember.backends._spec.linalg import linalg
from ember.backends._spec.nn import nn
from ember.backends._spec.random import random
from ember.backends._spec.stats import stats

NAMESPACES = {"core": core, "linalg": linalg, "stats": stats, "nn": nn, "random": random}

# Ops a backend may leave out. ``ember.ops`` has a composite of each, written with the other
# ops (:mod:`ember.ops.extra.composites`), and binds it for a backend without a kernel of its own;
# a backend with a fused kernel (torch's ``dense``/``lstm``/``gru``, MLX's ``dense``, NumPy's ``lstm``) defines
# the op (torch's and MLX's ``dot_product_attention`` and ``layer_norm``, torch's ``fused_batch_norm``).
COMPOSABLE = {"nn": frozenset({"dense", "lstm", "gru", "dot_product_attention", "layer_norm", "fused_batch_norm"})}


def op_names(namespace: str) -> list[str]:
    """Names of the ops the protocol defines in ``namespace`` (``COMPOSABLE`` ones included)."""
    spec = NAMESPACES[namespace]
    return [name for name, value in vars(spec).items() if callable(value) and not name.startswith("_")]
