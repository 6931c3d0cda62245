"""``ember.ops.stats`` offers the names the design documents promise, on every backend."""

from __future__ import annotations

import numpy as np

import ember
from ember import ops

PROMISED = ("mean", "var", "std", "median", "percentile", "max", "min", "sum", "cumsum", "argmax", "sort",
            "argsort", "gaussian")


def test_every_promised_name_works_and_aliases_are_the_core_ops(backend):
    x = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], dtype=np.float32)
    for name in PROMISED:
        assert callable(getattr(ops.stats, name)), name
    for name, reference in (("max", np.max), ("min", np.min), ("sum", np.sum), ("cumsum", np.cumsum),
                            ("sort", np.sort), ("argsort", np.argsort), ("argmax", np.argmax)):
        assert getattr(ops.stats, name) is getattr(ops, name)
        got = ops.to_numpy(getattr(ops.stats, name)(ops.convert_to_tensor(x), axis=1))
        np.testing.assert_array_equal(got, reference(x, axis=1))  # exact: sums of halves and integers


def test_aliases_are_differentiable_inside_a_tape(backend):
    x = ops.convert_to_tensor(np.array([1.0, 5.0, 2.0], dtype=np.float32))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.add(ops.stats.sum(ops.square(x)), ops.stats.max(x))
    np.testing.assert_array_equal(ops.to_numpy(tape.gradient(y, x)), [2.0, 11.0, 4.0])  # exact: 2 x + [x == max]
