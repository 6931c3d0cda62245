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


def test_quickstart_runs(backend, capsys, tmp_path, monkeypatch):
    """Trained on ``backend``, loaded on another installed backend (torch in the README)."""
    others = [name for name in ember.backends.available() if name != backend]
    if not others:
        pytest.skip("the quickstart loads its checkpoint on a second backend; only one is installed")
    code = quickstart_code()
    assert 'ember.set_backend("numpy")' in code and 'ember.set_backend("torch")' in code
    code = code.replace('ember.set_backend("numpy")', f'ember.set_backend("{backend}")')
    code = code.replace('ember.set_backend("torch")', f'ember.set_backend("{others[0]}")')
    monkeypatch.chdir(tmp_path)  # it writes digits.h5 in the working directory
    ember.clear_session()  # a fresh process: layer names start at "dense"
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "Total params: 4,810" in out
    # The README promises the same numbers on every backend.
    assert "val accuracy per epoch: [0.47, 0.7, 0.79, 0.89, 0.89, 0.88, 0.9, 0.9, 0.91, 0.91]" in out
    assert "test accuracy: 0.93" in out
    assert "[1 3 9 7] [1 3 5 7]" in out
    assert (tmp_path / "digits.h5").exists()
