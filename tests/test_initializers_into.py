"""Initializers draw straight into the backend's array, chunk by chunk: the same numbers as one
float64 draw of the whole shape cast to the dtype (the reference), on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import initializers, ops

SHAPE = (9, 13)  # 117 values: many chunks of the patched size, and a partial last one
CASES = [
    initializers.RandomUniform(-0.3, 0.7), initializers.RandomNormal(0.1, 2.0), initializers.TruncatedNormal(0.5, 1.5),
    initializers.GlorotUniform(), initializers.GlorotNormal(), initializers.HeNormal(), initializers.LecunUniform(),
    initializers.VarianceScaling(distribution="untruncated_normal"), initializers.Zeros(), initializers.Ones(),
    initializers.Constant(0.3),
]


@pytest.mark.parametrize("initializer", CASES, ids=lambda i: type(i).__name__)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_drawn_into_the_array_as_one_float64_draw_cast(backend, monkeypatch, initializer, dtype):
    monkeypatch.setattr(initializers, "_CHUNK", 10)
    got = ops.to_numpy(initializer(SHAPE, dtype=dtype, seed=3))
    want = initializer.sample(SHAPE, 3).astype(dtype)  # the whole shape in float64, then the cast
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_a_subclass_overriding_sample_is_used(backend):
    class Halves(initializers.RandomUniform):
        def sample(self, shape, seed):
            return np.full(shape, 0.5)

    np.testing.assert_array_equal(ops.to_numpy(Halves()((2, 3), seed=0)), np.full((2, 3), 0.5, "float32"))


def test_build_gives_the_same_weights_on_every_backend():
    weights = []
    for name in ember.backends.available():
        with ember.using_backend(name):
            model = ember.Sequential([ember.Input((5,)), ember.layers.Dense(7), ember.layers.Dense(2)])
            state = model.build(seed=11)
            weights.append([ops.to_numpy(state["params"][k][n]) for k in state["params"] for n in ("kernel", "bias")])
    for other in weights[1:]:
        for a, b in zip(weights[0], other):
            np.testing.assert_array_equal(a, b)
