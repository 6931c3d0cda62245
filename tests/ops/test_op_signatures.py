"""The type stubs of the op namespaces (``ember/ops/*.pyi``) say what each namespace holds at run time.

``ember.ops`` fills its namespaces when a backend is selected, so type checkers and IDEs read
the stubs that ``python -m ember.ops._stubgen`` writes from the op protocol. These tests keep
them true: the committed stubs are what the generator writes now; on every backend each public
name of each namespace is in its stub with the run-time function's parameters (names, kinds,
defaults), and the stub declares nothing the namespace lacks; every op has a docstring.
A backend switch still rebinds the names (``tests/ops/test_no_stale_binding.py``).
"""

from __future__ import annotations
import __future__

import ast
import importlib
import inspect
import pathlib
import types

import pytest

import ember
from ember import backends, ops
from ember.ops import _stubgen

OPS_DIR = pathlib.Path(ops.__file__).parent
# namespace module -> its stub file (ember.ops.image and ember.ops.extra are plain modules: no stub)
STUBBED = {"ember.ops": "__init__.pyi", "ember.ops.linalg": "linalg.pyi", "ember.ops.nn": "nn.pyi",
           "ember.ops.numpy": "numpy.pyi", "ember.ops.random": "random.pyi", "ember.ops.stats": "stats.pyi"}

_MISSING = object()


def _parse(module: str) -> dict[str, ast.AST]:
    """``{name: the statement that declares it}`` for the top level of ``module``'s stub."""
    tree = ast.parse((OPS_DIR / STUBBED[module]).read_text(encoding="utf-8"))
    declared: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            declared[node.name] = node
        elif isinstance(node, ast.ImportFrom) and node.module not in ("typing", "types"):  # not the stub's own
            for alias in node.names:
                assert alias.asname == alias.name, f"{module}: `import {alias.name}` without `as` re-exports nothing"
                declared[alias.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared[node.target.id] = node
    return declared


STUBS = {module: _parse(module) for module in STUBBED}


def _parameters(signature: inspect.Signature) -> list[tuple]:
    """What "the same parameters" compares: name, kind, default and the default's type (``0`` vs ``0.0``)."""
    return [(p.name, p.kind.name, p.default, type(p.default)) for p in signature.parameters.values()]


def _def_signature(node: ast.FunctionDef) -> inspect.Signature:
    """The signature a stub's ``def`` states (its defaults are literals)."""
    P = inspect.Parameter
    args = node.args
    positional = [(a, P.POSITIONAL_ONLY) for a in args.posonlyargs] + [(a, P.POSITIONAL_OR_KEYWORD) for a in args.args]
    defaults = [P.empty] * (len(positional) - len(args.defaults)) + [ast.literal_eval(d) for d in args.defaults]
    params = [P(a.arg, kind, default=d) for (a, kind), d in zip(positional, defaults)]
    if args.vararg:
        params.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    params += [P(a.arg, P.KEYWORD_ONLY, default=P.empty if d is None else ast.literal_eval(d))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        params.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def _stub_signature(module: str, name: str) -> inspect.Signature | None:
    """The signature the stub of ``module`` gives ``name``: its ``def``'s, or that of what it re-exports
    (followed through the other stubs); None for a declared variable or a module."""
    node = STUBS[module][name]
    if isinstance(node, ast.FunctionDef):
        return _def_signature(node)
    if isinstance(node, ast.AnnAssign):
        return None
    assert isinstance(node, ast.ImportFrom) and node.module
    if node.module == "ember.ops" and name in _stubgen.SUBMODULES:
        return None
    if node.module in STUBBED:
        return _stub_signature(node.module, name)
    return inspect.signature(getattr(importlib.import_module(node.module), name))


def _public_names(module: str) -> list[str]:
    """Every public name ``module`` holds at run time: its own, and those it serves by ``__getattr__``."""
    namespace = importlib.import_module(module)
    names = [name for name in vars(namespace) if not name.startswith("_")]
    names += getattr(namespace, "FROM_CORE", ())  # Keras's nn/linalg paths to top-level ops
    if module == "ember.ops.numpy":  # every name is read from ember.ops when asked for
        names += dir(namespace)
    # (``from __future__ import annotations`` binds a name too: not one of the namespace's.)
    return sorted({name for name in names if not isinstance(getattr(namespace, name), __future__._Feature)})


CASES = [(module, name) for module in STUBBED for name in sorted(STUBS[module]) if not name.startswith("__")]


def test_committed_stubs_are_what_the_generator_writes():
    assert _stubgen.stale() == [], "run `python -m ember.ops._stubgen` and commit the stubs"


def test_the_generator_finds_and_rewrites_a_stale_stub(tmp_path):
    assert _stubgen.write(tmp_path) == sorted(_stubgen.stubs())
    (tmp_path / "nn.pyi").write_text("# edited by hand\n", encoding="utf-8")
    assert _stubgen.stale(tmp_path) == ["nn.pyi"]
    assert _stubgen.write(tmp_path) == ["nn.pyi"] and _stubgen.stale(tmp_path) == []


@pytest.mark.parametrize("module", list(STUBBED))
def test_every_public_name_is_in_the_stub_with_its_signature(backend, module):
    namespace = importlib.import_module(module)
    stub = STUBS[module]
    missing = [name for name in _public_names(module) if name not in stub]
    assert not missing, f"{module} holds {missing} at run time but its stub does not declare them"
    mismatched = []
    for name in _public_names(module):
        value = getattr(namespace, name)
        expected = _stub_signature(module, name)
        if expected is None:
            continue
        actual = inspect.signature(value)
        if _parameters(actual) != _parameters(expected):
            mismatched.append(f"{module}.{name}: run time {actual} != stub {expected}")
    assert not mismatched, "\n".join(mismatched)


@pytest.mark.parametrize(("module", "name"), CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_the_stub_declares_nothing_the_namespace_lacks(module, name):
    with backends.using_backend("numpy"):
        value = getattr(importlib.import_module(module), name, _MISSING)
    assert value is not _MISSING, f"the stub of {module} declares {name!r}, which {module} does not have"
    node = STUBS[module][name]
    if isinstance(node, ast.FunctionDef):  # private names included (``_install``, ``_rebind`` ...)
        assert _parameters(inspect.signature(value)) == _parameters(_def_signature(node))
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ember.ops.extra."):
        assert value is getattr(importlib.import_module(node.module), name)  # a composed op: the very function


def test_a_composed_op_is_re_exported_from_its_home():
    """The checker reads a composed op's own signature and docstring: the stub imports it from ember.ops.extra."""
    node = STUBS["ember.ops"]["nansum"]
    assert isinstance(node, ast.ImportFrom) and node.module == "ember.ops.extra.math"


def test_every_stub_def_has_a_docstring():
    undocumented = [f"{module}.{name}" for module, declared in STUBS.items() for name, node in declared.items()
                    if isinstance(node, ast.FunctionDef) and not name.startswith("_") and not ast.get_docstring(node)]
    assert not undocumented, f"stub defs without a docstring (an IDE shows none): {undocumented}"


@pytest.mark.parametrize("module", list(STUBBED))
def test_every_public_op_has_a_docstring(backend, module):
    namespace = importlib.import_module(module)
    undocumented = [name for name in _public_names(module)
                    if callable(value := getattr(namespace, name)) and not isinstance(value, types.ModuleType)
                    and not (inspect.getdoc(value) or "").strip()]
    assert not undocumented, f"{module}: ops without a docstring: {undocumented}"


def test_a_name_taken_before_a_switch_keeps_its_signature_and_computes_on_the_new_backend(backend):
    """What ``from ember.ops import add`` took forwards after a switch, with the parameters its stub states."""
    other = next((name for name in backends.available() if name != backend), backend)
    add, relu = ops.add, ops.nn.relu
    with ember.using_backend(other):
        assert _parameters(inspect.signature(add)) == _parameters(_stub_signature("ember.ops", "add"))
        assert _parameters(inspect.signature(relu)) == _parameters(_stub_signature("ember.ops.nn", "relu"))
        assert type(add(ops.ones((2,)), 1.0)) is type(ops.ones((1,)))
