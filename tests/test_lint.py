"""Lint is part of the suite: a ruff finding fails ``make test``, not only ``make lint``.

``ruff check`` with the rules of ``pyproject.toml`` (``[tool.ruff]``) takes about a second over
the repository, so it runs here. mypy takes one to two minutes and runs in CI only (``make lint``,
called by ``.ci/run``). Where ruff is not installed (it is in the ``dev`` extra) the test skips and
says how to install it.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# What the suite lints, relative to the repository root (pyproject's [tool.ruff] excludes the rest).
RUFF_PATHS = (".",)


def _ruff(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it is in the dev extra: pip install -e '.[dev]')")
    # --no-cache: nothing written into the tree (the sdist's copy may be read-only).
    return subprocess.run([sys.executable, "-m", "ruff", *args, "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_ruff_finds_nothing():
    result = _ruff("check", "--output-format", "concise", *RUFF_PATHS)
    assert result.returncode == 0, f"ruff check {' '.join(RUFF_PATHS)}:\n{result.stdout}{result.stderr}"


def test_ruff_fails_on_a_finding(tmp_path):
    # The check above can fail: the same command, with the repository's configuration, reports an
    # unused import and a closure over a loop variable and exits non-zero.
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f():\n    return [lambda: i for i in range(3)]\n", encoding="utf-8")
    result = _ruff("check", "--output-format", "concise", "--config", str(ROOT / "pyproject.toml"), str(bad))
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"F401 .*`os`", result.stdout) and "B023" in result.stdout, result.stdout


def test_ci_runs_the_readme_test_command():
    # CI (.ci/run) runs exactly the command the README gives for the tests, after the cheaper checks.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", readme, re.M), "the README no longer gives `make test`"
    commands = [line.split("#")[0].strip() for line in ci.splitlines()]
    commands = [c for c in commands if c.startswith("make ")]
    assert commands[-1] == "make test", f".ci/run must end with the README's `make test`, runs {commands}"
    assert "make lint-imports" in commands[:-1], f".ci/run checks the import layers before the suite: {commands}"
