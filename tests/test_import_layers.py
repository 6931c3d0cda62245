"""The import rules of ARCHITECTURE.md that import-linter cannot see.

``lint-imports`` (``make lint-imports``, run by ``make test``) checks the module-level
graph against the contracts in ``pyproject.toml``. These tests add what a module graph
does not show: imports hidden inside functions, imports of the root package, and that
every top-level module of ``ember`` has its place in the layers contract.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the dev extra installs tomli
    tomllib = pytest.importorskip("tomli")

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ember"

# These tests read the package's sources next to the tests (and the contracts in pyproject.toml): run
# from an unpacked sdist against an installed wheel, with no ``ember/`` beside ``tests/``, they would
# check nothing, or fail on what is absent, so they skip and say why.
pytestmark = pytest.mark.skipif(
    not (PACKAGE / "__init__.py").is_file() or not (ROOT / "pyproject.toml").is_file(),
    reason=f"needs the source tree: no package sources at {PACKAGE} (the tests run against an installed copy)")

# Third-party packages a function may import on first use, and why (ARCHITECTURE.md,
# "Lazy imports"). Times are `python -X importtime` cumulative figures on the 2-core CI box.
LAZY_THIRD_PARTY = {
    "h5py": "required, but ~150 ms to import: paid only when a checkpoint is read or written",
    "ml_dtypes": "required, but ~25 ms to import: paid only when bfloat16 meets NumPy",
    "matplotlib": "optional extra [plot]: plot_history, plot_model and Wiring.draw only",
    "pydot": "optional extra [plot]: plot_model/model_to_dot with Graphviz only",
    "PIL": "optional extra [image]: ember.utils' image helpers only",
    "sklearn": "dev extra: the demo's data set",
    "networkx": "optional extra [graph]: OpGraph.to_networkx only",
    "tensorboardX": "optional extra [tensorboard]: the TensorBoard callback only, when training begins",
    "torch.distributed.fsdp": "~0.5 s to import after torch: paid by the first fit under fully_shard=True only",
}

# Applications of the public API, which import ``ember`` as a user would.
APPLICATIONS = ("ember/demo/", "ember/__main__.py")


def _modules() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _function_local_imports(tree: ast.AST):
    """Yield every import statement nested in a function or lambda."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield inner


def _imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return ["." * node.level + (node.module or "")]


def _is_ember(name: str) -> bool:
    return name.startswith(".") or name == "ember" or name.startswith("ember.")


def _relative(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_function_local_imports_of_ember_modules():
    found = [f"{_relative(path)}:{node.lineno}: {ast.unparse(node)}"
             for path in _modules() for node in set(_function_local_imports(ast.parse(path.read_text())))
             if any(_is_ember(name) for name in _imported_names(node))]
    assert not found, "import ember modules at module level (ARCHITECTURE.md, Import layers):\n" + "\n".join(found)


def test_function_local_third_party_imports_are_the_documented_lazy_ones():
    found = [f"{_relative(path)}:{node.lineno}: {ast.unparse(node)}"
             for path in _modules() for node in set(_function_local_imports(ast.parse(path.read_text())))
             for name in _imported_names(node)
             if not _is_ember(name) and name.split(".")[0] not in LAZY_THIRD_PARTY and name not in LAZY_THIRD_PARTY]
    assert not found, ("import at module level, or document and measure the lazy import in "
                       "LAZY_THIRD_PARTY and ARCHITECTURE.md:\n" + "\n".join(found))


def _is_submodule(name: str) -> bool:
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def test_only_applications_import_the_root_package():
    found = []
    for path in _modules():
        relative = _relative(path)
        if relative == "ember/__init__.py" or relative.startswith(APPLICATIONS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            root_import = (isinstance(node, ast.Import) and any(a.name == "ember" for a in node.names)) or (
                isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "ember"
                and not all(_is_submodule(alias.name) for alias in node.names))
            if root_import:
                found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "import the module that defines the name, not the root package:\n" + "\n".join(found)


def _layers_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(contract for contract in contracts if contract["id"] == "layers")


def test_every_top_level_module_has_a_place_in_the_layers_contract():
    layered = {name.strip() for layer in _layers_contract()["layers"]
               for group in layer.split("|") for name in group.split(":")}
    top_level = {f"ember.{path.stem}" for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    top_level |= {f"ember.{path.parent.name}" for path in PACKAGE.glob("*/__init__.py")}
    assert top_level - layered == set(), "add these modules to a layer of the contract"
    assert layered - top_level == set(), "the contract names modules that do not exist"


def test_no_contract_has_exceptions():
    """Every import obeys the contracts: none lists ``ignore_imports`` (the last ones, the MLX tape and
    the composite RNN ops, went with issue 16's follow-up)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    excepted = {contract["id"]: contract["ignore_imports"]
                for contract in config["tool"]["importlinter"]["contracts"] if contract.get("ignore_imports")}
    assert excepted == {}, "fix the import instead of listing it"


def _layer_of(module: str, layers: list[str]) -> int | None:
    """Index (0 = top) of the contract layer holding ``module`` (or a package above it)."""
    for index, layer in enumerate(layers):
        for group in layer.split("|"):
            for name in group.split(":"):
                name = name.strip()
                if module == name or module.startswith(name + "."):
                    return index
    return None


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(name: str, path: pathlib.Path) -> str:
    """An imported module's absolute name (relative imports resolved against ``path``'s package)."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[:len(package) - level + 1]
    return ".".join(base + ([name[level:]] if name[level:] else []))


def _imported_modules(node: ast.Import | ast.ImportFrom, path: pathlib.Path) -> list[str]:
    """What an import statement reaches: ``from ember import ops`` reaches ``ember.ops`` (``from a import b``
    is read as ``a.b``: a name inside ``a`` is in ``a``'s layer all the same)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = _absolute("." * node.level + (node.module or ""), path)
    return [f"{module}.{alias.name}" for alias in node.names]


def test_backends_import_nothing_above_the_op_protocol():
    """Every import in ``ember/backends`` (function-local ones too) targets the backends' layer or one below:
    the tape code gets its graph types from ``ember.recorded``, ``ember.ops`` binds the composite ops."""
    layers = _layers_contract()["layers"]
    own = _layer_of("ember.backends", layers)
    found = []
    for path in sorted((PACKAGE / "backends").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                reached = [_layer_of(name, layers) for name in _imported_modules(node, path) if _is_ember(name)]
                if any(layer is not None and layer < own for layer in reached):
                    found.append(f"{_relative(path)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "a backend imports above the op protocol:\n" + "\n".join(found)


def test_backend_step_builders_and_kernels_import_nothing_of_the_trainer():
    """The trainer hands a backend its step core (``make_steps(core, jit)``) and optimizers name
    their fused kernels: ``training.py``/``optim.py`` of a backend import nothing above the op protocol."""
    above = ("ember.training", "ember.autodiff", "ember.ops", "ember.layers", "ember.models", "ember.optimizers")
    checked = 0
    for path in sorted(PACKAGE.glob("backends/*/training.py")) + sorted(PACKAGE.glob("backends/*/optim.py")):
        checked += 1
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported_names(node):
                    assert not name.startswith(above), f"{_relative(path)} imports {name}"
    assert checked >= 5  # numpy/torch/mlx training.py, numpy/torch optim.py


def test_moved_modules_have_no_forwarding_paths():
    """One home per module: the old paths of moved modules are gone, not forwarding (issue 33)."""
    for old in ("ember.saving.serialization", "ember.models.symbolic", "ember.models.backend_check",
                "ember.ops._spec", "ember.autodiff.graph"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def _layer_core_imports() -> dict[str, set[str]]:
    """``{module: the ember.layers core modules it imports}`` for the modules directly in ember/layers/
    (every import statement, those under ``if TYPE_CHECKING:`` included)."""
    core = {path.stem: path for path in (PACKAGE / "layers").glob("*.py") if path.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name, path in core.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "ember.layers":
                found.update(alias.name for alias in node.names if alias.name in core)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for imported in _imported_names(node):
                    if imported.startswith("ember.layers.") and imported.split(".")[2] in core:
                        found.add(imported.split(".")[2])
        graph[name] = found - {name}
    return graph


def test_the_layer_core_modules_import_in_one_direction():
    """No import circle among ember/layers/*.py (layer, construction, handles, keras_object, ...):
    each can be read knowing only what it imports (issue 30)."""
    graph = _layer_core_imports()
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            assert state.get(target) != "open", f"import circle: {' -> '.join(path + [module, target])}"
            if target not in state:
                visit(target, path + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
