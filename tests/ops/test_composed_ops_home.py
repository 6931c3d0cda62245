"""Composed ops have one home, ``ember.ops.extra``: the Keras ops composed from the protocol and the
composites of the protocol ops a backend may leave out (``_spec.COMPOSABLE``) live there, and the
modules the composites came from are gone (no forwarding module keeps an old path alive)."""

from __future__ import annotations

import importlib

import pytest

from ember.backends import _spec
from ember.ops.extra import composites


@pytest.mark.parametrize("old", ["ember.ops._composite", "ember.ops._attention", "ember.ops._normalization"])
def test_the_old_homes_of_the_composites_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_every_composite_lives_in_ember_ops_extra_and_carries_the_protocols_docstring():
    assert {ns: set(table) for ns, table in composites.COMPOSITES.items()} == {
        ns: set(names) for ns, names in _spec.COMPOSABLE.items()}
    for namespace, table in composites.COMPOSITES.items():
        for name, function in table.items():
            assert function.__module__.startswith("ember.ops.extra."), f"{namespace}.{name}: {function.__module__}"
            assert composites.is_composite(function)
            assert function.__doc__ == getattr(_spec.NAMESPACES[namespace], name).__doc__
