"""``from ember.ops import X`` never computes on a backend that is no longer active."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember import backends, ops

PAIRS = list(itertools.permutations(backends.BACKENDS, 2))


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_imported_functions_follow_the_switch(first, second):
    if not (backends.is_installed(first) and backends.is_installed(second)):
        pytest.skip(f"needs {first} and {second} installed")
    ember.set_backend(first)
    from ember.ops import add, matmul, sum  # noqa: A004  (the op's own name)
    from ember.ops.nn import relu
    from ember.ops.stats import mean

    ember.set_backend(second)
    native = type(ops.zeros((1,)))
    a = np.array([[1.0, -2.0], [3.0, 4.0]], dtype=np.float32)
    result = matmul(a, [[1.0, 0.0], [0.0, 1.0]])  # NumPy array and list: the old trap
    assert type(result) is native
    np.testing.assert_array_equal(ops.to_numpy(result), a)
    assert type(add(a, 1.0)) is native and type(relu(a)) is native
    assert float(ops.to_numpy(sum(a, axis=None))) == 6.0 and type(mean(a)) is native
    ember.set_backend(first)  # back on its own backend it runs natively again
    assert type(matmul(a, a)) is type(ops.zeros((1,)))


def test_keywords_and_defaults_survive_forwarding(backend):
    other = next(name for name in backends.available() if name != backend) if len(backends.available()) > 1 \
        else backend
    from ember.ops import sum as ops_sum  # noqa: A004

    with ember.using_backend(other):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(ops.to_numpy(ops_sum(x, axis=1, keepdims=True)), [[3.0], [12.0]])
        np.testing.assert_array_equal(ops.to_numpy(ops_sum(x)), 15.0)


def test_a_foreign_array_still_raises_naming_both_backends():
    if not backends.is_installed("torch"):
        pytest.skip("needs torch")
    ember.set_backend("torch")
    from ember.ops import add

    t = ops.ones((2,))
    ember.set_backend("numpy")
    with pytest.raises(TypeError, match=r"torch array .* active backend is 'numpy'"):
        add(t, t)
