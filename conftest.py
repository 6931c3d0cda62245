"""The package's own doctests (``testpaths`` includes ``ember``, run with ``--doctest-modules``) on any install.

The backends and some features are optional (the extras of ``pyproject.toml``). On an install without them
(a core-only one: NumPy, optree, h5py):

* ``ember/backends/torch`` and ``ember/backends/mlx`` import their library, so where it is not installed their
  modules are not collected, rather than each being an import error; the test header names them;
* an example that shows an optional feature (``plot_model``, the TensorBoard callback, a switch to the torch
  backend, ...) skips, naming what to install, where it fails only because that optional package or backend
  is not installed. Any other failure, and a missing package that is no extra of Ember's, still fails.
"""

from __future__ import annotations

import doctest
import importlib.util
import pathlib

import pytest

from ember import backends

_BACKEND_PACKAGES = pathlib.Path(__file__).resolve().parent / "ember" / "backends"

# The import names of the libraries behind Ember's extras (pyproject.toml): an example may need one.
OPTIONAL = frozenset({"torch", "mlx", "matplotlib", "pydot", "PIL", "sklearn", "networkx", "tensorboardX", "mpi4py"})


def _missing_backends() -> list[str]:
    return [name for name in backends.BACKENDS if not backends.is_installed(name)]


def pytest_ignore_collect(collection_path: pathlib.Path, config):
    """Ignore ``ember/backends/<name>/`` where the library behind backend ``name`` is not installed."""
    if collection_path.parent == _BACKEND_PACKAGES and collection_path.name in _missing_backends():
        return True
    return None  # no opinion: pytest's other rules decide


def pytest_report_header(config):
    missing = _missing_backends()
    if missing:
        return [f"backends not installed (their modules' doctests are not collected): {', '.join(missing)}"]
    return None


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _missing_optional(error: BaseException) -> bool:
    """Whether ``error`` comes from an optional backend or package of Ember's that is not installed (Ember
    raises its own message naming the extra, chained to the import's ``ModuleNotFoundError``)."""
    if isinstance(error, backends.BackendNotAvailableError):
        return True
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError) and cause.name:
            top = cause.name.partition(".")[0]
            return top in OPTIONAL and not _installed(top)
        cause = cause.__cause__ or cause.__context__
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A doctest that fails only for want of an optional package or backend is reported as skipped."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed or call.excinfo is None:
        return
    failures = getattr(call.excinfo.value, "failures", [call.excinfo.value])  # --doctest-continue-on-failure
    errors = [failure.exc_info[1] for failure in failures if isinstance(failure, doctest.UnexpectedException)]
    if errors and len(errors) == len(failures) and all(_missing_optional(error) for error in errors):
        path, line, _ = item.reportinfo()
        report.outcome = "skipped"
        report.longrepr = (str(path), (line or 0) + 1, f"Skipped: the example needs what is not installed: {errors[0]}")
