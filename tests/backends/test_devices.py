"""Devices: every created array lands on the default device; to_device; bad names."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import backends, ops
from tests.helpers import assert_equal, native

CREATORS = {
    "zeros": lambda: ops.zeros((2, 3)),
    "ones": lambda: ops.ones(4, dtype="int32"),
    "full": lambda: ops.full((2,), 3.5),
    "zeros_like": lambda: ops.zeros_like(native([1.0, 2.0])),
    "ones_like": lambda: ops.ones_like(native([1, 2])),
    "full_like": lambda: ops.full_like(native([1.0, 2.0]), 7.0),
    "eye": lambda: ops.eye(3),
    "arange": lambda: ops.arange(5),
    "linspace": lambda: ops.linspace(0.0, 1.0, 5),
    "convert_to_tensor(list)": lambda: ops.convert_to_tensor([[1.0, 2.0]]),
    "convert_to_tensor(numpy)": lambda: ops.convert_to_tensor(np.ones((2, 2), np.float32)),
    "convert_to_tensor(scalar)": lambda: ops.convert_to_tensor(3),
    "asarray": lambda: ops.asarray([1, 2, 3]),
    "cast": lambda: ops.cast(np.arange(3), "float32"),
    "random.uniform": lambda: ops.random.uniform((3,), seed=1),
    "random.uniform(seed=None)": lambda: ops.random.uniform((3,)),
    "random.normal": lambda: ops.random.normal((3,), seed=1),
    "random.truncated_normal": lambda: ops.random.truncated_normal((3,), seed=1),
    "random.bernoulli": lambda: ops.random.bernoulli((3,), 0.5, seed=1),
    "random.randint": lambda: ops.random.randint((3,), 0, 10, seed=1),
    "random.categorical": lambda: ops.random.categorical(np.zeros((2, 3), np.float32), 4, seed=1),
    "random.permutation(int)": lambda: ops.random.permutation(5, seed=1),
    "random.permutation(array)": lambda: ops.random.permutation(np.arange(5), seed=1),
    "random.shuffle": lambda: ops.random.shuffle(np.arange(6).reshape(3, 2), seed=1),
    "random.dropout": lambda: ops.random.dropout(np.ones((4,), np.float32), 0.5, seed=1),
    "add(numpy, numpy)": lambda: ops.add(np.ones(2, np.float32), np.ones(2, np.float32)),
    "one_hot": lambda: ops.one_hot(np.array([0, 1]), 3),
    "linalg.inv": lambda: ops.linalg.inv(np.eye(2, dtype=np.float32) * 2),
    "linalg.svd": lambda: ops.linalg.svd(np.eye(2, dtype=np.float32), compute_uv=False),
    "stats.median": lambda: ops.stats.median(np.arange(5.0, dtype=np.float32)),
}


def test_default_device_is_available(backend):
    devices = ember.available_devices()
    assert devices == backends.available_devices()
    assert "cpu" in devices
    assert len(set(devices)) == len(devices)
    default = backends.default_device()
    assert default in devices
    assert ops.get_device() == default


def test_default_device_of_inactive_backend():
    for name in backends.available():
        assert backends.default_device(name) in backends.available_devices(name)


@pytest.mark.parametrize("label", list(CREATORS))
def test_created_arrays_land_on_default_device(backend, label):
    value = CREATORS[label]()
    default = backends.default_device()
    assert ops.get_device(value) == default, f"{label}: {ops.get_device(value)} != {default}"


# Each creator with an explicit device= argument.
CREATORS_ON_DEVICE = {
    "zeros": lambda device: ops.zeros((2,), device=device),
    "ones": lambda device: ops.ones((2,), device=device),
    "full": lambda device: ops.full((2,), 1.0, device=device),
    "eye": lambda device: ops.eye(2, device=device),
    "arange": lambda device: ops.arange(3, device=device),
    "linspace": lambda device: ops.linspace(0, 1, 3, device=device),
    "convert_to_tensor": lambda device: ops.convert_to_tensor([1.0, 2.0], device=device),
}


@pytest.mark.parametrize("creator", list(CREATORS_ON_DEVICE))
def test_explicit_device_argument(backend, creator):
    for device in ember.available_devices():
        assert ops.get_device(CREATORS_ON_DEVICE[creator](device)) == device


def test_to_device_round_trip(backend):
    default = backends.default_device()
    x = native(np.arange(6, dtype=np.float32).reshape(2, 3))
    for device in ember.available_devices():
        moved = ops.to_device(x, device)
        assert ops.get_device(moved) == device
        back = ops.to_device(moved, default)
        assert ops.get_device(back) == default
        assert_equal(back, np.arange(6).reshape(2, 3), dtype="float32")


def test_set_default_device_round_trip(backend):
    original = backends.default_device()
    try:
        for device in ember.available_devices():
            backends.set_default_device(device)
            assert backends.default_device() == device
            assert ops.get_device(ops.zeros((2,))) == device
            assert ops.get_device(ops.random.normal((2,), seed=0)) == device
    finally:
        backends.set_default_device(original)
    assert backends.default_device() == original


def _assert_names_devices(error, bad):
    message = str(error.value)
    assert bad in message, message
    for device in ember.available_devices():
        assert device in message, message


@pytest.mark.parametrize("bad", ["tpu:7", "cuda:99", "gpu:3", "not-a-device"])
def test_unknown_device_is_value_error_listing_valid_ones(backend, bad):
    x = native([1.0, 2.0])
    original = backends.default_device()
    with pytest.raises(ValueError) as info:
        ops.to_device(x, bad)
    _assert_names_devices(info, bad)
    with pytest.raises(ValueError) as info:
        backends.set_default_device(bad)
    _assert_names_devices(info, bad)
    assert backends.default_device() == original  # a failing call changes no state
    with pytest.raises(ValueError):
        ops.zeros((2,), device=bad)
