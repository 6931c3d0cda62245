"""Keras's namespaces at the top level have one home each: ``ember.losses`` *is* ``ember.training.losses``
(and so for metrics, optimizers, callbacks, data), importable under both names as one module object,
with type stubs at the public paths; and no module under ``ember/`` is a pure forwarding copy of another.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys
import textwrap

import pytest

import ember

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ember"
NAMES = ("callbacks", "data", "losses", "metrics", "optimizers")
needs_sources = pytest.mark.skipif(not (PACKAGE / "__init__.py").is_file(),
                                   reason=f"needs the source tree: no package sources at {PACKAGE}")


@pytest.mark.parametrize("name", NAMES)
def test_each_public_namespace_is_its_training_module(name):
    home = importlib.import_module(f"ember.training.{name}")
    assert getattr(ember, name) is home
    assert importlib.import_module(f"ember.{name}") is home is sys.modules[f"ember.{name}"]
    assert home.__name__ == f"ember.training.{name}"  # one name of its own: its home


def test_public_paths_import_in_a_fresh_interpreter():
    """What Keras users write (``from keras.losses import ...``), with Ember's names, before anything else
    is imported; a submodule through a public path (``ember.optimizers.schedules``,
    ``ember.data.timeseries``) is the home module itself, its file run once; and ``import ember`` loads
    every submodule of the five packages, so each has its public alias (none would be a second copy)."""
    code = textwrap.dedent("""
        import sys
        from ember.losses import MeanSquaredError
        from ember.metrics import AUC
        from ember.callbacks import EarlyStopping
        from ember.data import Dataset
        import ember.optimizers.schedules
        from ember.optimizers.schedules import CosineDecay
        import ember.data.timeseries as timeseries
        import ember
        assert MeanSquaredError is ember.training.losses.MeanSquaredError and AUC is ember.training.metrics.AUC
        assert EarlyStopping is ember.training.callbacks.EarlyStopping and Dataset is ember.training.data.Dataset
        assert ember.optimizers.schedules is sys.modules["ember.training.optimizers.schedules"]
        assert CosineDecay is ember.training.optimizers.schedules.CosineDecay
        assert timeseries is sys.modules["ember.training.data.timeseries"] is sys.modules["ember.data.timeseries"]
        assert timeseries.__spec__.name == "ember.training.data.timeseries"  # its own spec, not the alias's
        assert not [name for name in sys.modules if name.startswith("ember.") and sys.modules[name] is None]
        import pkgutil
        for namespace in ("callbacks", "data", "losses", "metrics", "optimizers"):
            home = getattr(ember.training, namespace)
            for info in pkgutil.walk_packages(home.__path__, home.__name__ + "."):
                public = "ember." + info.name[len("ember.training."):]
                assert sys.modules.get(public) is sys.modules.get(info.name) is not None, info.name
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={"EMBER_BACKEND": "numpy", "PATH": "", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_an_unknown_name_under_a_public_namespace_is_a_clear_import_error():
    with pytest.raises(ModuleNotFoundError, match="ember.losses.no_such_module"):
        importlib.import_module("ember.losses.no_such_module")
    with pytest.raises(ImportError, match="cannot import name 'NoSuchLoss'"):
        exec("from ember.losses import NoSuchLoss", {})


# ------------------------------------------------------------------------------ stubs
@needs_sources
@pytest.mark.parametrize("name", NAMES)
def test_stubs_at_the_public_paths_name_what_the_home_exports(name):
    """``ember/<name>.pyi`` re-exports its home, whose ``__all__`` is a literal list (so type checkers can
    read it: a star import in a stub re-exports exactly ``__all__``), the same list as at run time."""
    assert not (PACKAGE / f"{name}.py").exists(), f"ember/{name}.py is back: the namespace has its home in training/"
    stub = ast.parse((PACKAGE / f"{name}.pyi").read_text(encoding="utf-8"))
    imports = [node for node in stub.body if isinstance(node, ast.ImportFrom)]
    assert [(node.module, [alias.name for alias in node.names]) for node in imports[:2]] == \
        [(f"ember.training.{name}", ["*"]), (f"ember.training.{name}", ["__all__"])]
    home = PACKAGE / "training" / name / "__init__.py"
    assigned = [node.value for node in ast.parse(home.read_text(encoding="utf-8")).body
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)]
    assert len(assigned) == 1, f"{home}: one literal __all__"
    assert ast.literal_eval(assigned[0]) == list(importlib.import_module(f"ember.training.{name}").__all__)


# ------------------------------------------------------------------------------ forwarding modules
def _ember_source(node: ast.stmt) -> str | None:
    """The ember module a top-level import statement reads from (None: not an ember import)."""
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("ember"):
        return node.module
    if isinstance(node, ast.Import) and all(alias.name.startswith("ember.") for alias in node.names):
        return node.names[0].name if len(node.names) == 1 else "<several>"
    return None


def _is_bookkeeping(node: ast.stmt) -> bool:
    """A statement a forwarding module carries besides its imports: the docstring, ``from __future__``,
    ``import sys``, ``__all__ = ...``, ``sys.modules[...] = ...``."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return True
    if isinstance(node, ast.Import) and [alias.name for alias in node.names] == ["sys"]:
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(ast.unparse(t) == "__all__" or ast.unparse(t).startswith("sys.modules[") for t in targets)
    return False


def forwards_to(source: str, module: str, is_package: bool = False) -> str | None:
    """The one other ember module that the module ``module`` (its ``source``; ``is_package``: an
    ``__init__``) only re-exports, or None.

    A forwarding module's body is imports from a single ember module and bookkeeping, and it takes
    that module's whole surface (a star import, or every name of its ``__all__``): a second module
    object for one namespace. A package's ``__init__`` gathering its own submodules is its namespace,
    and a module that picks a few names of another (Keras's ``keras.applications.resnet50``, three
    names of ``resnet``) is a namespace of its own.
    """
    body = [node for node in ast.parse(source).body if not _is_bookkeeping(node)]
    sources = {_ember_source(node) for node in body}
    if not body or len(sources) != 1 or None in sources:
        return None
    (target,) = sources
    if is_package and (target.startswith(module + ".") or target == module):
        return None
    names = {alias.name for node in body for alias in getattr(node, "names", [])}
    whole = "*" in names or names >= set(getattr(importlib.import_module(target), "__all__", ()) or {"*"})
    return target if whole else None


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_forwarding_check_catches_the_five_alias_modules_that_were_removed():
    losses = ('"""``ember.losses``: the public loss namespace (re-exports :mod:`ember.training.losses`)."""\n\n'
              "from ember.training.losses import *  # noqa: F401,F403\n"
              "from ember.training.losses import __all__  # noqa: F401\n")
    optimizers = ('"""``ember.optimizers``: the public optimizer namespace."""\n\n'
                  "from __future__ import annotations\n\nimport sys\n\n"
                  "from ember.training.optimizers import *  # noqa: F401,F403\n"
                  "from ember.training.optimizers import __all__, schedules  # noqa: F401  (re-exported)\n\n"
                  'sys.modules[__name__ + ".schedules"] = schedules\n')
    assert forwards_to(losses, "ember.losses") == "ember.training.losses"
    assert forwards_to(optimizers, "ember.optimizers") == "ember.training.optimizers"
    listed = "from ember.training.callbacks import " + ", ".join(ember.training.callbacks.__all__) + "\n"
    assert forwards_to(listed, "ember.callbacks") == "ember.training.callbacks"  # every name, written out
    gathering = ("from ember.dtype_policies import DTypePolicy\n"
                 "from ember.training.optimizers import LossScaleOptimizer\n")
    assert forwards_to(gathering, "ember.mixed_precision") is None  # a Keras namespace gathered from two homes
    assert forwards_to("from ember.applications.resnet import ResNet50\n", "ember.applications.resnet50") is None


@needs_sources
def test_no_module_under_ember_is_a_pure_forwarding_module():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        target = forwards_to(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        if target is not None:
            found[module] = target
    assert not found, f"modules that only re-export another ember module (give each one home): {found}"


@needs_sources
def test_no_ember_module_imports_a_public_namespace_path():
    """Internal code imports ``ember.training.<name>``; the public paths exist once ``ember`` is imported."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{alias.name}" if node.module == "ember" else node.module
                         for alias in node.names]
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                      if any(name == f"ember.{n}" or name.startswith(f"ember.{n}.") for n in NAMES)]
    assert not found, "import ember.training.<name> inside the package:\n" + "\n".join(found)
