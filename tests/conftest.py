"""Shared fixtures: one ``backend`` fixture parametrizes a test over every backend."""

from __future__ import annotations

import pytest

import ember
from ember import backends

BACKENDS = backends.BACKENDS


def _activate(name):
    if not backends.is_installed(name):
        pytest.skip(f"backend {name!r} is not installed (pip install \"ember[{name}]\")")
    previous = ember.get_backend()
    ember.set_backend(name)
    try:
        yield name
    finally:
        ember.set_backend(previous)


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Activate each backend in turn; skip (with the reason) one that is not installed."""
    yield from _activate(request.param)


@pytest.fixture
def torch_backend():
    """For tests of torch-only behaviour (requires_grad flags, devices): activate torch."""
    yield from _activate("torch")


@pytest.fixture
def mlx_backend():
    """For tests of MLX-only behaviour (operator patching): activate MLX."""
    yield from _activate("mlx")


@pytest.fixture(autouse=True)
def _default_backend_numpy():
    """Every test starts on the NumPy backend unless it asks for ``backend``."""
    ember.set_backend("numpy")
    yield
