"""Shared fixtures: one ``backend`` fixture parametrizes a test over every backend.

``EMBER_TEST_TORCH_DEVICE=cuda`` runs the whole suite with torch's default device set to that
device (the suite on a GPU); unset, torch creates arrays on the CPU as usual.

Hypothesis runs the same examples on every run and machine: the ``ci`` profile, loaded by default,
derandomizes (examples seeded from each test's own code) and has no deadline (a loaded machine must
not fail a property test on time). ``HYPOTHESIS_PROFILE=explore`` (or ``--hypothesis-profile=explore``)
draws fresh random examples instead, to look for new failures; a failure prints its reproduction blob.
The number of examples is each test's own (``@settings(max_examples=...)``, ``tests.helpers.PROPERTY``),
else Hypothesis's default, in both profiles.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import ember
from ember import backends

# Registered and loaded here, before any test module builds its ``settings(...)`` (a settings object takes
# the fields it does not set from the profile loaded when it is made).
settings.register_profile("ci", settings.get_profile("default"), derandomize=True, deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", settings.get_profile("default"), derandomize=False, deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

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


@pytest.fixture(autouse=True, scope="session")
def _torch_test_device():
    """Put torch's new arrays on ``$EMBER_TEST_TORCH_DEVICE`` for the whole session, if set.

    On CUDA, torch runs cuDNN convolutions and RNNs in TF32 by default (10-bit mantissas); the
    suite compares float32 results with float32 tolerances, so it turns TF32 off for itself
    (Ember leaves torch's setting alone for users: ARCHITECTURE.md, "Devices").
    """
    device = os.environ.get("EMBER_TEST_TORCH_DEVICE")
    if device and backends.is_installed("torch"):
        backends.set_default_device(device, backend="torch")
    if backends.is_installed("torch") and backends.default_device("torch") != "cpu":
        import torch  # here: the suite also runs without torch installed

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    yield


@pytest.fixture
def torch_on_cpu():
    """Torch's default device set to the CPU for one test (restored after), for behaviour that is
    the CPU's by design; the CUDA side of it is tested in tests/test_cuda.py."""
    if not backends.is_installed("torch"):
        yield
        return
    previous = backends.default_device("torch")
    backends.set_default_device("cpu", backend="torch")
    try:
        yield
    finally:
        backends.set_default_device(previous, backend="torch")


@pytest.fixture(autouse=True)
def _default_backend_numpy():
    """Every test starts on the NumPy backend unless it asks for ``backend``."""
    ember.set_backend("numpy")
    yield
