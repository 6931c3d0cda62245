"""The README's quickstart runs as written, on every backend, and prints what the README says."""

from __future__ import annotations

import pathlib
import re

import pytest

import ember

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def quickstart_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_quickstart_is_at_most_25_lines():
    assert len(quickstart_code().strip().splitlines()) <= 25


def run_quickstart(backend: str, other: str, folder: pathlib.Path, monkeypatch, capsys) -> str:
    """The quickstart's printed output, trained on ``backend`` and reloaded on ``other``."""
    code = quickstart_code()
    assert 'ember.set_backend("numpy")' in code and 'ember.set_backend("torch")' in code
    code = code.replace('ember.set_backend("numpy")', f'ember.set_backend("{backend}")')
    code = code.replace('ember.set_backend("torch")', f'ember.set_backend("{other}")')
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)  # it writes digits.h5 in the working directory
    ember.clear_session()  # a fresh process: layer names start at "dense"
    capsys.readouterr()
    exec(compile(code, str(README), "exec"), {})
    assert (folder / "digits.h5").exists()
    return capsys.readouterr().out


def printed(out: str, prefix: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(prefix))[len(prefix):].strip()


def test_quickstart_runs(backend, capsys, tmp_path, monkeypatch):
    """Trained on ``backend``, loaded on another installed backend (torch in the README)."""
    others = [name for name in ember.backends.available() if name != backend]
    if not others:
        pytest.skip("the quickstart loads its checkpoint on a second backend; only one is installed")
    out = run_quickstart(backend, others[0], tmp_path, monkeypatch, capsys)
    assert "Total params: 4,810" in out
    assert "Dense" in out and "Output Shape" in out  # the summary table
    accuracies = eval(printed(out, "val accuracy per epoch:"))  # noqa: S307 - a list the code printed
    assert len(accuracies) == 10 and accuracies[-1] > accuracies[0] and accuracies[-1] >= 0.85
    assert float(printed(out, "test accuracy:")) >= 0.9  # the README says 0.93


def test_quickstart_prints_the_same_numbers_on_every_backend(capsys, tmp_path, monkeypatch):
    """The README's promise: the same seed gives the same accuracies on NumPy, torch and MLX."""
    installed = ember.backends.available()
    if len(installed) < 2:
        pytest.skip(f"needs two installed backends to compare, installed: {installed}")
    outputs = {}
    for backend in installed:
        other = next(name for name in installed if name != backend)
        out = run_quickstart(backend, other, tmp_path / backend, monkeypatch, capsys)
        outputs[backend] = [line for line in out.splitlines()
                            if line.startswith(("val accuracy per epoch:", "test accuracy:", "["))]
    first = installed[0]
    for backend in installed[1:]:
        assert outputs[backend] == outputs[first], (backend, first)
