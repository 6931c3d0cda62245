"""Ops used the way a user would: ``tests/ops/test_op_typing.py`` type-checks this file with mypy
(no error expected) and runs it on every backend.

Everything here goes through the stubs of ``ember/ops/*.pyi``: protocol ops, composed ops, the
top-level forwarders to ``nn``/``linalg``/``stats`` ops, the Keras paths (``ops.nn.one_hot``,
``ops.numpy``), ``ember.random`` and the image ops.
"""

from __future__ import annotations

from typing import Any

import ember
from ember import ops
from ember.ops import nn, stats
from ember.ops import numpy as enp


def forward(x: Any, kernel: Any, bias: Any) -> Any:
    """A dense layer, a softmax and a log-sum-exp over the classes."""
    logits = ops.nn.dense(x, kernel, bias)
    probabilities = ops.nn.softmax(logits, axis=-1)
    return ops.logsumexp(ops.log(probabilities), axis=-1, keepdims=False)


def statistics(x: Any) -> tuple[Any, Any, Any]:
    """A protocol stats op, a core op through ``ops.stats``, and a forwarder at the top level."""
    return stats.median(x, axis=0), stats.max(x, axis=0, keepdims=True), ops.median(x)


def keras_paths(labels: Any) -> tuple[Any, Any]:
    """Keras's names under ``ops.nn`` and ``ops.numpy`` for ops Ember keeps at the top level."""
    return nn.one_hot(labels, num_classes=3), enp.add(labels, 1)


def draws(seed: int) -> tuple[Any, Any]:
    """``ember.random`` protocol ops and the composed distributions with a ``SeedGenerator``."""
    generator = ember.random.SeedGenerator(seed)
    return ember.random.uniform((2, 3), minval=-1.0, maxval=1.0, seed=seed), ember.random.gamma((2,), 2.0,
                                                                                                 seed=generator)


def image(batch: Any) -> Any:
    """An image op (``ember.ops.image`` is a plain module, typed by its source)."""
    return ops.image.resize(batch, (2, 2))


def run() -> list[Any]:
    """Every function above on the active backend (the test runs this on each)."""
    x = ops.convert_to_tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    kernel, bias = ops.ones((3, 4)), ops.zeros((4,))
    labels = ops.convert_to_tensor([0, 2], dtype="int32")
    return [forward(x, kernel, bias), *statistics(x), *keras_paths(labels), *draws(0),
            image(ops.ones((1, 4, 4, 3)))]
