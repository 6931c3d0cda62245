"""The package is read in one direction (issue #33): no module found by a string, no class made at run time.

* An Ember module is reached by an ``import`` statement, which the import contracts check, never by
  ``importlib.import_module("ember....")`` or ``__import__``: a string hides a dependency from the
  contracts, from type checkers and from a reader. The one exception is the backend registry, which
  loads the backend the user chose (torch and MLX are optional, so their packages cannot be
  imported up front).
* Classes are written as ``class`` statements, not made with ``type(name, bases, namespace)``.
* Each backend package names its parts (``training``, ``autodiff``, ``optim``, ``distributed``,
  ``remat``, ``export``, ``cuda_graphs``; None where it has none), and the trainer, the tape,
  ``ember.distribute``, remat and export ask the loaded backend for them.
* A backend's steps class is a plain subclass of :class:`ember.backends._steps.GenericSteps`.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import ember
from ember import backends
from ember.autodiff import numpy_engine
from ember.autodiff.engines import engine_module
from ember.backends._steps import GenericSteps

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ember"
pytestmark = pytest.mark.skipif(not (PACKAGE / "__init__.py").is_file(),
                                reason=f"needs the source tree: no package sources at {PACKAGE}")

# The backend registry: loads the package of the backend the user chose (an optional dependency).
STRING_IMPORTS_ALLOWED = {"ember/backends/__init__.py": "ember.backends.{name}"}
PARTS = ("training", "autodiff", "optim", "distributed", "remat", "export", "cuda_graphs")
STEPS_CLASS = {"numpy": "NumpySteps", "torch": "TorchSteps", "mlx": "MLXSteps"}


def _sources() -> list[tuple[str, ast.AST]]:
    return [(path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())) for path in sorted(PACKAGE.rglob("*.py"))]


def _called_name(call: ast.Call) -> str:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else ""


def _names_an_ember_module(argument: ast.expr) -> bool:
    """A string constant or f-string that starts with ``ember`` (an f-string with a leading placeholder
    could name anything, so it counts too)."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value == "ember" or argument.value.startswith("ember.")
    if isinstance(argument, ast.JoinedStr):
        first = argument.values[0] if argument.values else None
        return not isinstance(first, ast.Constant) or str(first.value).startswith("ember")
    return not isinstance(argument, ast.Constant)  # a variable: where it points is invisible


def _string_imports(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and _called_name(node) in ("import_module", "__import__") and node.args
            and _names_an_ember_module(node.args[0])]


def test_no_ember_module_is_imported_by_a_string():
    found = []
    for path, tree in _sources():
        for call in _string_imports(tree):
            if path in STRING_IMPORTS_ALLOWED:
                continue
            found.append(f"{path}:{call.lineno}: {ast.unparse(call)}")
    assert not found, "import Ember modules with import statements, not strings:\n" + "\n".join(found)


def test_the_check_finds_string_imports():
    """The detector itself, on the forms the package used to have."""
    forms = ['importlib.import_module(f"ember.backends.{name}.training")',
             'importlib.import_module("ember.backends.torch.export")', "importlib.import_module(NATIVE[name])",
             '__import__("ember.ops")']
    for form in forms:
        assert _string_imports(ast.parse(form)), form
    for allowed in ['importlib.import_module("torch")', 'importlib.import_module("mpi4py.MPI")']:
        assert not _string_imports(ast.parse(allowed)), allowed


def _runtime_classes(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "type" and len(node.args) == 3]


def test_no_class_is_made_with_type():
    found = [f"{path}:{call.lineno}: {ast.unparse(call)[:80]}" for path, tree in _sources()
             for call in _runtime_classes(tree)]
    assert not found, "write classes as class statements:\n" + "\n".join(found)
    assert _runtime_classes(ast.parse('type("TorchSteps", (Base, generic), {})'))  # the detector finds one


def test_each_backend_names_its_parts(backend):
    module = backends.current()
    missing = [part for part in PARTS if not hasattr(module, part)]
    assert not missing, f"backend {backend!r} does not name its parts {missing} (None where it has none)"
    assert callable(module.training.make_steps)
    assert module.cuda_graphs is None or backend == "torch"
    assert (module.optim is None) == (backend == "mlx")  # MLX compiles the generic update
    assert (module.remat is None) == (backend == "numpy")  # NumPy recomputes through a custom gradient
    # The tape engine: the backend's own part, or Ember's engine for NumPy (which has no autograd).
    expected = numpy_engine if backend == "numpy" else module.autodiff
    assert engine_module(backend) is expected


def test_each_backend_steps_class_is_a_plain_subclass_of_the_generic_steps(backend):
    model = ember.Sequential([ember.Input((2,)), ember.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.build(seed=0)
    steps = model._training.trainer.steps
    steps_class = getattr(backends.current().training, STEPS_CLASS[backend])
    assert type(steps) is steps_class
    assert issubclass(steps_class, GenericSteps)
    assert steps_class.__module__ == f"ember.backends.{backend}.training"
