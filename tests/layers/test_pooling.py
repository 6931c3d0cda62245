"""Pooling layers: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D, GlobalMax/AveragePooling1D/2D/3D.

Each layer goes through :func:`run_layer_test` against the NumPy float64 reference of
:mod:`tests.layers.conv_reference` (TF placement of "same" padding; padded cells left
out of averages), and a few cases against torch.nn.functional's pooling with the
asymmetric "same" padding applied explicitly.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.layers import conv_reference as ref
from tests.layers.layer_test import run_layer_test

POOL_CASES = [
    # (class, kwargs, input shape)
    (layers.MaxPooling1D, dict(), (2, 7, 3)),
    (layers.MaxPooling1D, dict(pool_size=3, strides=1, padding="same"), (2, 6, 2)),
    (layers.MaxPooling2D, dict(), (2, 5, 5, 3)),
    (layers.MaxPooling2D, dict(pool_size=(3, 2), strides=(2, 1), padding="same"), (2, 6, 5, 2)),
    (layers.MaxPooling3D, dict(pool_size=2, padding="same"), (1, 3, 4, 5, 2)),
    (layers.AveragePooling1D, dict(pool_size=2, padding="same"), (2, 5, 3)),
    (layers.AveragePooling1D, dict(pool_size=3, strides=2), (2, 8, 2)),
    (layers.AveragePooling2D, dict(pool_size=3, strides=2, padding="same"), (2, 6, 7, 2)),
    (layers.AveragePooling2D, dict(pool_size=(2, 3)), (2, 4, 7, 3)),
    (layers.AveragePooling3D, dict(pool_size=(2, 2, 3), strides=1), (1, 3, 3, 4, 2)),
]


@pytest.mark.parametrize("cls, kwargs, shape", POOL_CASES)
def test_pooling(cls, kwargs, shape):
    nd = cls.rank
    pool = tuple(np.broadcast_to(kwargs.get("pool_size", 2), (nd,)).tolist())
    strides = pool if kwargs.get("strides") is None else tuple(np.broadcast_to(kwargs["strides"], (nd,)).tolist())
    mode = "max" if "Max" in cls.__name__ else "average"
    run_layer_test(
        lambda: cls(**kwargs, name="pool"),
        shape,
        reference=lambda p, x: ref.pool(x, pool, strides, kwargs.get("padding", "valid"), mode),
    )


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D])
def test_pooling_channels_first(cls):
    mode = "max" if cls is layers.MaxPooling2D else "average"
    run_layer_test(
        lambda: cls(3, strides=2, padding="same", data_format="channels_first", name="pool"),
        (2, 3, 5, 4),
        reference=lambda p, x: ref.to_first(ref.pool(ref.to_last(x), (3, 3), (2, 2), "same", mode)),
        expected_output_shape=(2, 3, 3, 2),
    )


def test_max_pooling_integer_input():
    x = np.random.default_rng(0).integers(-50, 50, size=(2, 4, 5, 3)).astype(np.int32)
    out = run_layer_test(
        lambda: layers.MaxPooling2D(2, padding="same", name="pool"),
        (2, 4, 5, 3),
        input_dtype="int32",
        input_data=x,
        expected_output_dtype="int32",
        reference=lambda p, v: ref.pool(v.astype(np.float64), (2, 2), (2, 2), "same", "max"),
    )
    assert out["outputs"].dtype == np.int32


@pytest.mark.parametrize("cls, kwargs, shape", [
    (layers.GlobalMaxPooling1D, dict(), (2, 5, 3)),
    (layers.GlobalMaxPooling2D, dict(keepdims=True), (2, 3, 4, 2)),
    (layers.GlobalMaxPooling3D, dict(data_format="channels_first"), (2, 3, 2, 2, 2)),
    (layers.GlobalAveragePooling1D, dict(data_format="channels_first", keepdims=True), (2, 3, 5)),
    (layers.GlobalAveragePooling2D, dict(), (2, 3, 4, 2)),
    (layers.GlobalAveragePooling3D, dict(keepdims=True), (1, 2, 3, 2, 3)),
])
def test_global_pooling(cls, kwargs, shape):
    nd = cls.rank
    first = kwargs.get("data_format") == "channels_first"
    axes = tuple(range(2, 2 + nd)) if first else tuple(range(1, 1 + nd))
    reduce = np.max if "Max" in cls.__name__ else np.mean
    keepdims = kwargs.get("keepdims", False)
    channels = shape[1] if first else shape[-1]
    if keepdims:
        expected = (shape[0], channels) + (1,) * nd if first else (shape[0],) + (1,) * nd + (channels,)
    else:
        expected = (shape[0], channels)
    run_layer_test(
        lambda: cls(**kwargs, name="global_pool"),
        shape,
        reference=lambda p, x: reduce(x, axis=axes, keepdims=keepdims),
        expected_output_shape=expected,
    )


def _torch_pool_reference(nd, pool, strides, mode):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def reference(p, x):
        xt = torch.from_numpy(np.moveaxis(x, -1, 1).copy())
        pads = []
        for n, k, s in reversed(list(zip(x.shape[1:-1], pool, strides))):
            pads.extend(ref.tf_same_pads(n, k, s))  # F.pad takes the last axis first
        if mode == "max":
            y = {1: F.max_pool1d, 2: F.max_pool2d}[nd](F.pad(xt, pads, value=-np.inf), pool, strides)
        else:
            fn = {1: F.avg_pool1d, 2: F.avg_pool2d}[nd]
            sums = fn(F.pad(xt, pads), pool, strides)
            counts = fn(F.pad(torch.ones_like(xt), pads), pool, strides)  # real cells per window
            y = sums / counts
        return np.moveaxis(y.numpy(), 1, -1)

    return reference


@pytest.mark.parametrize("cls, pool, strides, shape", [
    # Inputs above run_layer_test's finite-difference limit: torch is the output reference here.
    (layers.MaxPooling2D, (3, 3), (2, 2), (2, 12, 13, 2)),
    (layers.AveragePooling2D, (3, 2), (2, 2), (2, 10, 14, 3)),
    (layers.MaxPooling1D, (2,), (1,), (2, 40, 8)),
    (layers.AveragePooling1D, (4,), (3,), (2, 40, 8)),
])
def test_pooling_matches_torch_functional(cls, pool, strides, shape):
    mode = "max" if "Max" in cls.__name__ else "average"
    run_layer_test(
        lambda: cls(pool, strides=strides, padding="same", name="pool"),
        shape,
        reference=_torch_pool_reference(cls.rank, pool, strides, mode),
    )


@pytest.mark.parametrize("layer, input_shape, expected", [
    # Keras: valid floor((n - k) / s) + 1; same floor((n - 1) / s) + 1.
    (layers.MaxPooling1D(), (None, 7, 3), (None, 3, 3)),
    (layers.MaxPooling1D(3, strides=2, padding="same"), (None, None, 3), (None, None, 3)),
    (layers.MaxPooling2D((3, 3), strides=(2, 1)), (None, 9, 9, 4), (None, 4, 7, 4)),
    (layers.AveragePooling2D(2, padding="same"), (None, 7, 8, None), (None, 4, 4, None)),
    (layers.AveragePooling2D(2, data_format="channels_first"), (None, 3, 8, 6), (None, 3, 4, 3)),
    (layers.MaxPooling3D(2, strides=(1, 2, 3), padding="same"), (None, 4, 4, 4, 1), (None, 4, 2, 2, 1)),
    (layers.AveragePooling3D(), (None, 4, None, 5, 2), (None, 2, None, 2, 2)),
    (layers.GlobalAveragePooling1D(), (None, None, 5), (None, 5)),
    (layers.GlobalMaxPooling2D(keepdims=True, data_format="channels_first"), (None, 5, 3, 3), (None, 5, 1, 1)),
    (layers.GlobalAveragePooling3D(keepdims=True), (None, 2, 2, 2, 5), (None, 1, 1, 1, 5)),
])
def test_compute_output_shape(layer, input_shape, expected):
    assert layer.compute_output_shape(input_shape) == expected
    assert layer(ember.Input(input_shape[1:])).shape == expected


def test_config_and_aliases():
    pool = layers.MaxPooling2D(3)
    assert pool.pool_size == (3, 3) and pool.strides == (3, 3) and pool.data_format == "channels_last"
    assert layers.MaxPooling2D.from_config(pool.get_config()).get_config() == pool.get_config()
    assert layers.MaxPool2D is layers.MaxPooling2D and layers.AvgPool1D is layers.AveragePooling1D
    assert layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.MaxPooling2D(0), ValueError, "pool_size"),
    (lambda: layers.MaxPooling2D((2, 2, 2)), ValueError, "pool_size must be an int or a tuple of 2 ints"),
    (lambda: layers.AveragePooling1D(2, strides=0), ValueError, "strides"),
    (lambda: layers.AveragePooling1D(2, padding="causal"), ValueError, "padding must be one of"),
    (lambda: layers.MaxPooling3D(data_format="NDHWC"), ValueError, "data_format"),
    (lambda: layers.GlobalMaxPooling2D(keepdims=1), TypeError, "keepdims must be a bool"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_input_shapes(backend):
    pool = layers.MaxPooling2D(3, name="p")
    with pytest.raises(ValueError, match=r"'p'.*rank 4"):
        pool.compute_output_shape((None, 8, 3))
    with pytest.raises(ValueError, match=r"'p'.*empty output"):
        pool.compute_output_shape((None, 2, 8, 3))
    with pytest.raises(ValueError, match=r"'p'.*empty output"):
        pool.apply(pool.build((None, 8, 8, 1)), ops.ones((1, 2, 8, 1)))
    with pytest.raises(ValueError, match=r"'g'.*rank 3"):
        layers.GlobalAveragePooling1D(name="g").apply({"params": {}, "buffers": {}}, ops.ones((1, 2, 8, 1)))
