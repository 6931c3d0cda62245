"""The README's quickstart runs as written, on every backend."""

from __future__ import annotations

import pathlib
import re

import ember

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def quickstart_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_quickstart_is_at_most_25_lines():
    assert len(quickstart_code().strip().splitlines()) <= 25


def test_quickstart_runs(backend, capsys):
    code = quickstart_code().replace('ember.set_backend("numpy")', f'ember.set_backend("{backend}")')
    ember.clear_session()  # a fresh process: layer names start at "dense"
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "(8, 3)" in out
    assert "['dense', 'dense_1']" in out
    assert "Total params: 131" in out
