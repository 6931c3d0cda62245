"""A type checker sees every op with its real signature (the stubs ``ember/ops/*.pyi``).

mypy checks ``tests/ops/typed_usage.py`` (ops used as a user would: no error) together with a
snippet of wrong calls, each of which must be reported on its own line: a misspelt keyword, a
missing argument, an op that does not exist, through every kind of name the stubs declare.
``typed_usage.py`` also runs on every backend, so what type-checks is what computes.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from ember import ops
from ember.ops import _stubgen
from tests.ops import typed_usage

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the [dev] extra (make lint)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
USAGE = pathlib.Path(typed_usage.__file__)

# (a wrong call, what mypy must say about its line)
WRONG = [
    ("ops.add(x1=x, x3=x)", 'Unexpected keyword argument "x3" for "add"'),  # a protocol op
    ("ops.sum(x, axes=0)", 'Unexpected keyword argument "axes" for "sum"'),
    ("ops.add(x)", 'Missing positional argument "x2" in call to "add"'),
    ("ops.no_such_op(x)", 'Module has no attribute "no_such_op"'),
    ("ops.nn.relu(x, alpha=0.1)", 'Unexpected keyword argument "alpha" for "relu"'),  # a namespace's op
    ("ops.relu(x, alpha=0.1)", 'Unexpected keyword argument "alpha" for "relu"'),  # a top-level forwarder
    ("ops.logsumexp(x, dim=1)", 'Unexpected keyword argument "dim" for "logsumexp"'),  # a composed op
    ("ops.stats.max(x, axes=0)", 'Unexpected keyword argument "axes" for "max"'),  # a core op under stats
    ("ops.nn.multi_hot(x, classes=3)", 'Unexpected keyword argument "classes" for "multi_hot"'),  # Keras's path
    ("ops.numpy.add(x)", 'Missing positional argument "x2" in call to "add"'),  # keras.ops.numpy's path
    ("ops.linalg.solve(x)", 'Missing positional argument "b" in call to "solve"'),
    ("ops.random.uniform((2,), sed=0)", 'Unexpected keyword argument "sed" for "uniform"'),
    ("ops.random.SeedGenerator('7')", 'Argument 1 to "SeedGenerator" has incompatible type "str"'),  # typed
    ("ops.image.resize(x, (2, 2), fill=0)", 'Unexpected keyword argument "fill" for "resize"'),  # a plain module
]


def _snippet() -> str:
    lines = ["from typing import Any", "", "from ember import ops", "", "", "def wrong(x: Any) -> None:"]
    return "\n".join(lines + [f"    {call}" for call, _ in WRONG]) + "\n"


FIRST_WRONG_LINE = 7  # the line of WRONG[0] in the snippet


def test_mypy_accepts_ops_used_right_and_reports_each_wrong_call(tmp_path):
    snippet = tmp_path / "wrong_calls.py"
    snippet.write_text(_snippet(), encoding="utf-8")
    # The project's settings; imported modules are analysed but only these two files reported on
    # (`make lint` checks the package itself). A fresh cache: the run does not depend on an earlier one.
    stdout, stderr, _ = mypy_api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
        "--follow-imports", "silent", "--no-error-summary", "--hide-error-context", str(USAGE), str(snippet)])
    assert not stderr, stderr
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert not [e for e in errors if e.startswith(str(USAGE))], f"mypy rejects ops used right:\n{stdout}"
    by_line: dict[int, list[str]] = {}
    for error in errors:
        match = re.match(rf"{re.escape(str(snippet))}:(\d+): error: (.*)", error)
        assert match, f"an error outside the two files: {error}"
        by_line.setdefault(int(match.group(1)), []).append(match.group(2))
    for offset, (call, expected) in enumerate(WRONG):
        reported = by_line.pop(FIRST_WRONG_LINE + offset, [])
        assert any(expected in message for message in reported), f"{call}: expected {expected!r}, got {reported}"
    assert not by_line, f"errors on lines with no wrong call: {by_line}"


def test_the_namespace_modules_own_code_type_checks(tmp_path):
    """`make lint` reads each stub in place of the module it describes; the modules' own code is checked here
    (mypy checks a file named on its command line, stub or not)."""
    modules = [str(ROOT / "ember" / "ops" / name.replace(".pyi", ".py")) for name in sorted(_stubgen.stubs())]
    stdout, stderr, status = mypy_api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
        "--follow-imports", "silent", *modules])
    assert status == 0 and not stderr, stdout + stderr


def test_typed_usage_runs(backend):
    results = typed_usage.run()
    assert all(ops.is_array(result) for result in results)
