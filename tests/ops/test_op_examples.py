"""Every public callable of ``ember.ops`` and of its op namespaces (``nn``, ``linalg``, ``random``,
``stats``) shows a runnable ``Example:`` in the docstring a user reads (``help(ops.<name>)``), and each
example runs as a doctest on every backend.

The docstrings come from two places: the op protocol (``ember/backends/_spec/``), which every backend's
function carries, and the ops Ember composes over it (``ember/ops/extra/``). ``ember.ops.image`` is
tested in ``tests/ops/test_image.py`` and ``tests/test_docs.py``.
"""

from __future__ import annotations

import doctest
import inspect
import types

import pytest

import ember
from ember import ops

NAMESPACES = {"ember.ops": ops, "ember.ops.nn": ops.nn, "ember.ops.linalg": ops.linalg,
              "ember.ops.random": ops.random, "ember.ops.stats": ops.stats}


def _public_callables(module) -> list[tuple[str, object]]:
    """``(name, value)`` of every public function or class bound into an ops namespace (as
    ``docs/gen_api.py`` lists them), read from the namespace itself so a new op cannot be missed."""
    return sorted((name, value) for name, value in vars(module).items()
                  if not name.startswith("_") and callable(value) and not isinstance(value, types.ModuleType))


def _examples() -> list[tuple[str, object]]:
    """``(qualified name, callable)`` with one entry per distinct docstring (``ops.dot`` and
    ``ops.linalg.dot`` share one; the top-level forwarders share their op's)."""
    seen: set[str] = set()
    out = []
    for namespace, module in NAMESPACES.items():
        for name, value in _public_callables(module):
            doc = value.__doc__ or ""
            if doc not in seen:
                seen.add(doc)
                out.append((f"{namespace}.{name}", value))
    return out


def test_every_public_ops_callable_has_an_example(backend):
    """The count cannot regress: a new op, or a backend binding a function without the protocol's
    docstring, fails here."""
    missing = [f"{namespace}.{name}" for namespace, module in NAMESPACES.items()
               for name, value in _public_callables(module) if "Example:" not in (value.__doc__ or "")]
    total = sum(len(_public_callables(module)) for module in NAMESPACES.values())
    assert total > 300, f"only {total} public ops callables found: the namespaces were not bound"
    assert not missing, f"no `Example:` in the docstring of {len(missing)} ops callables: {missing}"


def test_ops_examples_run_on_every_backend(backend):
    """Each example runs with ``backend`` active (re-selected before every docstring, as an example may
    switch backends), in the globals of the module that defines the callable, as ``--doctest-modules``."""
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures: list[str] = []
    not_run = []
    for qualified, value in _examples():
        module = inspect.getmodule(value)
        attempted = 0
        for test in finder.find(value, qualified, globs=dict(vars(module)) if module else {}):
            ember.set_backend(backend)
            attempted += runner.run(test, out=failures.append).attempted
        if not attempted:
            not_run.append(qualified)
    ember.set_backend(backend)
    assert not not_run, f"an `Example:` without a doctest (`>>>` lines) in {not_run}"
    assert not failures, f"{len(failures)} failing example lines on {backend}:\n" + "".join(failures[:5])


@pytest.mark.parametrize("name", ["add", "absolute", "nanmean", "celu"])
def test_help_shows_the_example(backend, name):
    """``help(ops.<name>)`` reads ``__doc__`` of the bound function: protocol ops and composed ones alike."""
    assert "Example:" in getattr(ops, name).__doc__
    assert ">>> from ember import ops" in inspect.getdoc(getattr(ops, name))
