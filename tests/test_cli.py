"""The command line: ``python -m ember info`` reports backends, versions and devices; ``demo`` parses
its options and hands them to :func:`ember.demo.run_demo` (the demo itself: tests/test_demo.py)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from ember import backends
from ember.__main__ import backend_report, main, program_name


def test_info_lists_every_backend_with_version_and_devices():
    result = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in backends.BACKENDS:
        assert name in result.stdout
    for row in backend_report():
        if row["installed"]:
            assert row["version"] in result.stdout
            assert row["default"] in row["devices"].split(", ")


def test_unknown_command_fails_with_usage():
    result = subprocess.run([sys.executable, "-m", "ember", "nonsense"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "invalid choice" in result.stderr


def test_demo_help_lists_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--backend", "--epochs", "--batch-size", "--plot", "--verbose"):
        assert option in text


@pytest.mark.parametrize("argv, message", [
    (["--backend", "tensorflow"], "unknown backend 'tensorflow'; valid names: numpy, torch, mlx"),
    (["--backend", "numpy,jax"], "unknown backend 'jax'; valid names: numpy, torch, mlx"),
    (["--epochs", "0"], "--epochs must be an integer >= 1, received 0"),
    (["--epochs", "two"], "argument --epochs: invalid int value: 'two'"),
    (["--batch-size", "-4"], "--batch-size must be an integer >= 1, received -4"),
])
def test_demo_argument_errors_exit_2_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m ember demo" in err and message in err


def test_demo_passes_its_options_to_run_demo(monkeypatch):
    from ember import demo

    seen = {}
    monkeypatch.setattr(demo, "run_demo", lambda backends, **options: seen.update(backends=backends, **options) or 1)
    assert main(["demo", "--backend", "numpy", "--backend", "torch,mlx", "--epochs", "3", "--batch-size", "64",
                 "--plot", "h.png", "--verbose", "2"]) == 1
    assert seen == {"backends": ["numpy", "torch,mlx"], "epochs": 3, "batch_size": 64, "plot": "h.png", "verbose": 2}
    seen.clear()
    assert main(["demo"]) == 1
    assert seen == {"backends": None, "plot": None, "verbose": 0}


def test_demo_reports_a_missing_library_and_exits_1(monkeypatch, capsys):
    from ember import demo

    def missing(*args, **kwargs):
        raise ImportError('the demo trains on scikit-learn\'s digits data set: pip install "ember[dev]"')

    monkeypatch.setattr(demo, "run_demo", missing)
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert 'error: the demo trains on scikit-learn\'s digits data set: pip install "ember[dev]"' in err


def test_an_error_while_the_demo_runs_is_not_a_usage_error(monkeypatch):
    from ember import demo

    def broken(*args, **kwargs):
        raise ValueError("a bug inside fit")

    monkeypatch.setattr(demo, "run_demo", broken)
    with pytest.raises(ValueError, match="a bug inside fit"):  # its traceback, not exit 2 with the usage
        main(["demo", "--backend", "numpy"])


@pytest.mark.parametrize(("argv0", "expected"), [
    ("/venv/bin/ember", "ember"),
    ("C:\\venv\\Scripts\\ember.exe", "ember"),
    ("/work/ember/__main__.py", "python -m ember"),  # python -m ember
    ("/venv/bin/pytest", "python -m ember"),  # main() called from other code
    ("", "python -m ember"),
])
def test_the_program_name_follows_how_ember_was_invoked(argv0, expected):
    assert program_name(argv0) == expected


def test_usage_names_the_console_script_when_run_from_it(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/ember", "--help"])
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith("usage: ember [-h]")
    monkeypatch.setattr(sys, "argv", ["/src/ember/__main__.py", "demo", "--bogus"])
    with pytest.raises(SystemExit):
        main(["demo", "--bogus"])
    assert capsys.readouterr().err.startswith("usage: python -m ember [-h]")


@pytest.mark.parametrize("how", ["module", "script"])
def test_help_in_a_new_process(how):
    script = pathlib.Path(sys.executable).with_name("ember")
    if how == "script" and not script.exists():
        pytest.skip(f"no console script next to {sys.executable} (ember is not pip-installed here)")
    command = [sys.executable, "-m", "ember", "--help"] if how == "module" else [str(script), "--help"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m ember " if how == "module" else "usage: ember "), result.stdout
