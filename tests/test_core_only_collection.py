"""A core-only install collects the whole suite (CONTRIBUTING.md, "Tests").

Ember needs only NumPy, optree and h5py (and ml_dtypes, xxhash); the suite adds pytest and Hypothesis.
Everything else is optional: the torch and MLX backends, and the references the tests compare with
(scikit-learn, SciPy, Keras, Pillow, matplotlib, ...). Where one is missing, a test file that needs it
skips with the reason instead of failing to import, and the package's doctests leave out the backend
whose library is missing. Checked here by collecting the suite in a fresh interpreter in which every
optional package fails to import.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Top-level names of the optional packages the suite or the package may import (extras and dev extra).
OPTIONAL = ("torch", "mlx", "keras", "scipy", "sklearn", "statsmodels", "snntorch", "matplotlib", "networkx",
            "tensorboard", "tensorboardX", "pydot", "PIL", "onnxruntime", "onnx", "onnxscript", "yaml", "mkdocs",
            "mkdocstrings",
            "material", "importlinter", "build", "mpi4py", "tomli")

# Run by a fresh interpreter: hide the optional packages (their import raises ModuleNotFoundError, as
# where they are not installed), then collect with the suite's own configuration (pyproject.toml).
COLLECT = """
import sys

BLOCKED = set(sys.argv[1].split(","))


class HideOptional:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: a core-only install)", name=name)
        return None


for module in [m for m in sys.modules if m.partition(".")[0] in BLOCKED]:
    del sys.modules[module]
sys.meta_path.insert(0, HideOptional())

import pytest

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"]))
"""


def test_a_core_only_install_collects_the_suite_and_skips_what_needs_more():
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTEST_ADDOPTS", "EMBER_BACKEND", "EMBER_TEST_TORCH_DEVICE")}
    result = subprocess.run([sys.executable, "-c", COLLECT, ",".join(OPTIONAL)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    out = result.stdout + result.stderr
    lines = out.splitlines()
    assert result.returncode == 0, out[-6000:]
    assert not any(line.startswith("ERROR") for line in lines), out[-6000:]
    assert " tests collected" in lines[-1] and "error" not in lines[-1], lines[-1]
    # The optional packages were really hidden: files that need them skipped, with the reason ...
    assert any(line.startswith("SKIPPED") and "tests/test_cuda.py" in line and "torch" in line for line in lines), \
        out[-6000:]
    # ... files that need them only for some tests still run the others ...
    for test in ("tests/autodiff/test_numpy_traced.py::test_second_derivative_of_cube",
                 "tests/features/test_pca.py::test_auto_solver_follows_sklearn_rule",
                 "tests/models/test_keras_object.py::"):
        assert any(line.startswith(test) for line in lines), f"{test} not collected"
    # ... and the doctests of the backends whose library is missing are not collected.
    assert not any(line.startswith(("ember/backends/torch/", "ember/backends/mlx/")) for line in lines)
    assert any(line.startswith("ember/backends/numpy/") for line in lines) or \
        not (ROOT / "ember" / "backends" / "numpy").is_dir()
