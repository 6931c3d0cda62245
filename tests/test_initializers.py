"""Initializers: backend-independent seeded values, Keras's statistics, devices, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import backends, initializers, layers, ops

ALL = ["zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal",
       "variance_scaling", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
       "lecun_uniform", "lecun_normal", "orthogonal", "identity"]


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_values_on_every_backend(name):
    values = {}
    for backend_name in backends.available():
        with ember.using_backend(backend_name):
            array = initializers.get(name)((6, 4), dtype="float32", seed=3)
            assert ops.dtype(array) == "float32"
            assert ops.get_device(array) == backends.default_device()
            values[backend_name] = ops.to_numpy(array)
    reference = values["numpy"]
    for backend_name, value in values.items():
        np.testing.assert_array_equal(value, reference, err_msg=backend_name)


def test_seed_reproducible_and_distinct():
    init = initializers.get("glorot_uniform")
    a, b, c = (ops.to_numpy(init((5, 5), seed=s)) for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_initializer_own_seed_is_used_when_the_call_has_none():
    init = initializers.RandomNormal(seed=7)
    np.testing.assert_array_equal(ops.to_numpy(init((3,))), ops.to_numpy(init((3,))))


@pytest.mark.parametrize(("name", "fan", "kind"), [
    ("glorot_uniform", "avg", "uniform"), ("he_uniform", "in", "uniform"), ("lecun_uniform", "in", "uniform"),
    ("glorot_normal", "avg", "normal"), ("he_normal", "in", "normal"), ("lecun_normal", "in", "normal"),
])
def test_variance_scaling_statistics(name, fan, kind):
    shape = (400, 300)
    w = ops.to_numpy(initializers.get(name)(shape, dtype="float64", seed=0)).astype(np.float64)
    fan_in, fan_out = shape
    n = {"avg": (fan_in + fan_out) / 2, "in": fan_in}[fan]
    scale = 2.0 if name.startswith("he") else 1.0
    expected_var = scale / n
    # the sample variance of n draws has relative standard error sqrt((kurtosis - 1) / n) <= sqrt(2 / n) = 0.4%
    # (kurtosis <= 3: uniform 1.8, normal truncated at 2 sd 2.4); 6.1 of them: a false failure below 1e-9
    assert w.var() == pytest.approx(expected_var, rel=6.1 * np.sqrt(2 / w.size))
    if kind == "uniform":
        assert np.abs(w).max() <= math.sqrt(3 * expected_var) + 1e-12
    else:
        # truncated at two standard deviations of the untruncated normal
        assert np.abs(w).max() <= 2 * math.sqrt(expected_var) / 0.87962566103423978 + 1e-12


def test_fans_of_conv_kernels():
    assert initializers.compute_fans((3, 3, 8, 16)) == (72.0, 144.0)
    assert initializers.compute_fans((5,)) == (5.0, 5.0)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 3, 4)])
def test_orthogonal_on_every_backend(backend, shape):
    w = ops.to_numpy(initializers.Orthogonal(gain=2.0)(shape, dtype="float32", seed=5)).astype(np.float64)
    assert w.shape == shape
    flat = w.reshape(-1, shape[-1])
    rows, cols = flat.shape
    gram = flat.T @ flat if rows >= cols else flat @ flat.T
    # a float32 QR's Q is orthonormal within p(n) eps, n <= 6 (LAPACK's p(n) <= n): 7e-7; times gain**2 = 4:
    # 2.9e-6 -> 1e-5
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)


def test_truncated_normal_within_two_stddev(backend):
    w = ops.to_numpy(initializers.TruncatedNormal(mean=1.0, stddev=0.5)((2000,), seed=0))
    assert np.all(np.abs(w - 1.0) <= 1.0 + 1e-6)


def test_constant_identity_zeros_ones(backend):
    np.testing.assert_array_equal(ops.to_numpy(initializers.Constant(2.5)((2, 2))), np.full((2, 2), 2.5, np.float32))
    np.testing.assert_array_equal(ops.to_numpy(initializers.Identity(gain=3.0)((2, 3))), 3.0 * np.eye(2, 3))
    assert ops.to_numpy(initializers.get("zeros")((3,), dtype="bfloat16")).dtype.name == "bfloat16"
    assert ops.dtype(initializers.get("ones")((3,), dtype="float16")) == "float16"


def test_config_round_trip():
    for name in ALL:
        init = initializers.get(name)
        again = type(init).from_config(init.get_config())
        assert again.get_config() == init.get_config()


def test_bad_input():
    with pytest.raises(ValueError, match="unknown initializer 'glorot'"):
        initializers.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan_sideways")
    with pytest.raises(ValueError, match="scale must be positive"):
        initializers.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        initializers.Orthogonal()((4,))
    with pytest.raises(ValueError, match="2-D"):
        initializers.Identity()((2, 2, 2))
    with pytest.raises(TypeError, match="shape"):
        initializers.Zeros()("abc")
    with pytest.raises(TypeError, match="seed"):
        initializers.RandomNormal()((2,), seed=1.5)


# ----------------------------------------------------------------- Keras's names (issue 19)
@pytest.mark.parametrize("kwargs", [{}, {"side": "imag"}, {"window": "hamming", "scaling": "spectrum"},
                                    {"periodic": True}, {"window": None}])
def test_stft_initializer_matches_keras(backend, kwargs):
    import os

    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    expected = keras.ops.convert_to_numpy(keras.initializers.STFT(**kwargs)((16, 1, 9), dtype="float32"))
    actual = ops.to_numpy(initializers.STFT(**kwargs)((16, 1, 9)))
    # Keras evaluates cos/sin in float32 at arguments up to 2*pi*15*8/16: ~2e-6 absolute error near zeros.
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=5e-6)


def test_lowercase_initializer_names_are_the_classes(backend):
    assert initializers.he_normal is initializers.HeNormal and initializers.stft is initializers.STFT
    assert initializers.IdentityInitializer is initializers.Identity
    assert initializers.OrthogonalInitializer is initializers.Orthogonal
    np.testing.assert_array_equal(ops.to_numpy(initializers.glorot_uniform(seed=3)((3, 2))),
                                  ops.to_numpy(initializers.GlorotUniform(seed=3)((3, 2))))
    layer = layers.Dense(2, kernel_initializer=initializers.zeros)  # a class, as Keras accepts
    assert not np.any(ops.to_numpy(layer.build((None, 3), seed=0)["params"]["kernel"]))
    imag = initializers.STFT(side="imag")
    assert initializers.deserialize(initializers.serialize(imag)) == initializers.STFT(side="imag")
    with pytest.raises(ValueError, match="STFT: unknown window"):
        initializers.STFT(window="kaiserish")
