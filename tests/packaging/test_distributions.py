"""The wheel and the sdist a maintainer would publish: built offline from this tree with
``python -m build --no-isolation`` (the build requirements are the test environment's own), their
contents checked against the tree, and the sdist, unpacked and installed in a temporary folder,
running a fast subset of the suite against the installed copy.

``build`` and ``setuptools`` are in the ``dev`` extra; where either is missing the test skips and
says which (an environment without them cannot build a distribution at all). The tests build from the
source tree the tests sit in: where ``ember`` is not imported from that tree's ``ember/`` (the suite run
from an unpacked sdist against an installed wheel) they skip and say so.
"""

from __future__ import annotations

import email
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import ember

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Files the full test suite and a contributor need next to the package.
TOP_LEVEL = ("LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "Makefile", "pyproject.toml", "MANIFEST.in",
             "conftest.py")
# Folders whose every file the sdist carries (the tests read the tutorials and the docs).
FULL_FOLDERS = ("tests", "tutorials", "docs", "benchmarks")
# A fast subset of the suite, run from the unpacked sdist against the installed package: dtypes and
# a layer family on every backend (conftest, helpers and the layer test harness), and the checks
# that read the README, the tutorials and the docs.
FAST_SUBSET = ("tests/test_dtypes.py", "tests/layers/test_merge.py",
               "tests/test_readme.py::test_quickstart_is_at_most_25_lines",
               "tests/test_tutorials.py::test_every_tutorial_is_checked",
               "tests/test_docs.py::test_every_page_is_in_the_site_navigation")


def _require_build_tools():
    for module in ("build", "setuptools"):
        try:
            __import__(module)
        except ImportError:
            pytest.skip(f"{module!r} is not installed (it is in the dev extra: pip install -e '.[dev]')")


def _require_source_tree():
    """The distributions are built from ``ROOT`` and compared with the imported ``ember``: both must be the
    source tree's (a checkout, an editable install, or an unpacked sdist with its ``ember/``)."""
    source = ROOT / "ember" / "__init__.py"
    if not source.is_file() or pathlib.Path(ember.__file__).resolve() != source.resolve():
        pytest.skip(f"needs the source tree: ember is imported from {pathlib.Path(ember.__file__).parent}, "
                    f"not from {ROOT / 'ember'} (the suite runs against an installed copy)")


def _tree_files(folder: str) -> set[str]:
    return {path.relative_to(ROOT).as_posix() for path in (ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
            and ".pytest_cache" not in path.parts and "site" not in path.relative_to(ROOT).parts[1:2]}


@pytest.fixture(scope="module")
def distributions(tmp_path_factory):
    """``(sdist, wheel)`` paths: the sdist built from the tree, the wheel built from the sdist."""
    _require_source_tree()
    _require_build_tools()
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=300)
    (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return sdist, wheel


def test_wheel_holds_the_package_its_license_and_marker_and_publishable_metadata(distributions):
    _, wheel = distributions
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = f"ember-{ember.__version__}.dist-info"
        metadata = email.message_from_bytes(archive.read(f"{dist_info}/METADATA"))
    package = {p.relative_to(ROOT).as_posix() for pattern in ("*.py", "*.pyi") for p in (ROOT / "ember").rglob(pattern)
               if "__pycache__" not in p.parts}  # the stubs too (ember/losses.pyi: what type checkers read)
    assert package <= names, sorted(package - names)[:10]
    assert "ember/py.typed" in names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert not any(name.startswith(("tests/", "tutorials/")) for name in names)
    assert metadata["Version"] == ember.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["Keywords"] and metadata["Author"]
    assert any(c.startswith("Programming Language :: Python :: 3.10") for c in metadata.get_all("Classifier"))
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    urls = {url.split(",")[0] for url in metadata.get_all("Project-URL")}
    assert urls >= {"Repository", "Documentation", "Changelog"}


def test_sdist_holds_everything_the_test_suite_reads(distributions):
    sdist, _ = distributions
    prefix = f"ember-{ember.__version__}/"
    with tarfile.open(sdist) as archive:
        names = {name[len(prefix):] for name in archive.getnames() if name.startswith(prefix)}
    expected = set(TOP_LEVEL) | {"ember/py.typed", "ember/_version.py"}
    for folder in FULL_FOLDERS:
        expected |= _tree_files(folder)
    assert expected <= names, sorted(expected - names)[:10]
    assert "tests/conftest.py" in names and "tests/helpers.py" in names


@pytest.mark.slow
def test_sdist_unpacked_and_installed_runs_the_fast_subset(distributions, tmp_path):
    sdist, _ = distributions
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    source = tmp_path / f"ember-{ember.__version__}"
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(source)],
                   check=True, capture_output=True, text=True, timeout=300)
    shutil.rmtree(source / "ember")  # the tests must import the installed copy, not the source
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    env.pop("EMBER_BACKEND", None)
    where = subprocess.run([sys.executable, "-c", "import ember; print(ember.__file__, ember.__version__)"],
                           cwd=source, env=env, check=True, capture_output=True, text=True)
    assert where.stdout.split() == [str(site / "ember" / "__init__.py"), ember.__version__]
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             *FAST_SUBSET], cwd=source, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
