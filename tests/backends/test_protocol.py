"""The op protocol: every backend defines every ``_spec`` op with the spec's signature,
and ``ember.ops`` re-binds to the active backend on every switch."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import ember
from ember import backends, ops
from ember.backends import _spec
from ember.ops.extra import composites

SPEC_OPS = [(namespace, name) for namespace in _spec.NAMESPACES for name in _spec.op_names(namespace)]


def _native_type(name):
    """The array type a backend's ops must return (imported here, independently of Ember)."""
    if name == "numpy":
        return np.ndarray
    if name == "torch":
        return importlib.import_module("torch").Tensor
    return importlib.import_module("mlx.core").array


def _parameters(function):
    """``[(name, kind, default, type(default))]``: what "identical signature" compares."""
    return [
        (p.name, p.kind.name, p.default, type(p.default))
        for p in inspect.signature(function).parameters.values()
    ]


def test_spec_is_not_empty():
    assert {"core", "linalg", "stats", "nn", "random"} <= set(_spec.NAMESPACES)
    assert len(SPEC_OPS) > 150


@pytest.mark.parametrize(("namespace", "name"), SPEC_OPS, ids=[f"{ns}.{n}" for ns, n in SPEC_OPS])
def test_backend_defines_op_with_spec_signature(backend, namespace, name):
    module = importlib.import_module(f"ember.backends.{backend}.{namespace}")
    function = getattr(module, name, None)
    composed = function is None and name in _spec.COMPOSABLE.get(namespace, ())
    if composed:  # left out by the backend: ember.ops binds the composite
        assert name not in backends.current().op_tables()[namespace]
        function = composites.COMPOSITES[namespace][name]
    assert callable(function), f"ember.backends.{backend}.{namespace} does not define {name!r}"
    expected = _parameters(getattr(_spec.NAMESPACES[namespace], name))
    try:
        actual = _parameters(function)
    except (TypeError, ValueError) as error:  # builtins without a signature
        pytest.fail(f"{backend}.{namespace}.{name} has no inspectable signature: {error}")
    assert actual == expected, f"{backend}.{namespace}.{name}{inspect.signature(function)} != spec {expected}"
    # The registry must bind exactly this function (not the NotImplementedError stand-in).
    assert composites.bound_tables(backends.current())[namespace][name] is function


def test_the_composable_ops_are_the_composites():
    assert {ns: set(names) for ns, names in _spec.COMPOSABLE.items()} == {
        ns: set(table) for ns, table in composites.COMPOSITES.items()}


@pytest.mark.parametrize(("namespace", "name"), SPEC_OPS, ids=[f"{ns}.{n}" for ns, n in SPEC_OPS])
def test_ember_ops_binds_active_backend_function(backend, namespace, name):
    bound_in = ops if namespace == "core" else getattr(ops, namespace)
    # ember.ops binds a copy of the backend's function (same code, closure and defaults; see
    # ember.ops._binding): as fast as the original, and forwarding once the backend changes.
    bound, function = getattr(bound_in, name), composites.bound_tables(backends.current())[namespace][name]
    assert bound.__wrapped__ is function
    assert bound.__code__ is function.__code__ and bound.__closure__ == function.__closure__
    assert bound.__defaults__ == function.__defaults__
    assert getattr(bound_in, name).__doc__, f"ember.ops {namespace}.{name} has no docstring"


def _creations():
    """One call per namespace; each must return the active backend's native array."""
    eye = ops.eye(3)
    return {
        "zeros": ops.zeros((2, 3)),
        "random.normal": ops.random.normal((2, 3), seed=1),
        "nn.relu": ops.nn.relu(ops.ones((2,))),
        "linalg.inv": ops.linalg.inv(ops.multiply(eye, 2.0)),
        "stats.median": ops.stats.median(ops.ones((5,))),
        "sum": ops.sum(ops.ones((3,))),
    }


def test_ops_namespaces_rebind_on_switch(backend):
    # `ops` was imported at module level (before any switch): it must follow every switch.
    linalg, stats, nn, random = ops.linalg, ops.stats, ops.nn, ops.random
    for other in backends.available():
        with ember.using_backend(other):
            expected = _native_type(other)
            for label, value in _creations().items():
                assert isinstance(value, expected), f"{label} on {other} returned {type(value)}"
            assert ops.linalg is linalg and ops.stats is stats and ops.nn is nn and ops.random is random
            assert linalg.inv.__wrapped__ is backends.load(other).op_tables()["linalg"]["inv"]
            assert random.normal.__wrapped__ is backends.load(other).op_tables()["random"]["normal"]
        # back on the fixture's backend
        assert ember.get_backend() == backend
        for label, value in _creations().items():
            assert isinstance(value, _native_type(backend)), f"{label} after leaving {other}"


def test_set_backend_switches_functions_seen_through_module_reference(backend):
    import ember.ops as ops_module

    for other in backends.available():
        ember.set_backend(other)
        assert ember.get_backend() == other
        assert isinstance(ops_module.zeros((1,)), _native_type(other))
        assert isinstance(ops_module.stats.median(ops_module.ones((3,))), _native_type(other))


def test_ember_random_is_ops_random():
    assert ember.random is ops.random


CORE_PARTS = ("core", "_base", "_creation", "_elementwise", "_reduce", "_shape", "_index", "_products")


def _defining_module(function) -> str:
    """The backend module (``core``, ``_shape``, ...) where a core op is written."""
    return getattr(function, "__module__", "").rsplit(".", 1)[-1]


@pytest.mark.parametrize("name", _spec.op_names("core"))
def test_core_op_lives_in_the_same_file_in_every_backend(name):
    """A maintainer finds e.g. ``getitem`` in ``<backend>/_index.py`` whatever the backend."""
    homes = {}
    for backend in backends.available():
        module = importlib.import_module(f"ember.backends.{backend}.core")
        homes[backend] = _defining_module(getattr(module, name))
    assert len(set(homes.values())) == 1 and set(homes.values()) <= set(CORE_PARTS), homes
