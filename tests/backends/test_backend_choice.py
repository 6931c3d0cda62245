"""Remembering and explaining the backend choice: ``set_backend(persist=True)``, ``config``,
``auto_select``, ``active_choice``, ``EMBER_ML_BACKEND``, ``info`` and ``doctor``."""

from __future__ import annotations

import io
import json

import pytest

import ember
from ember import backends, doctor
from ember.__main__ import main, print_info


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No backend variables, EMBER_HOME an empty directory; the active choice restored after."""
    for variable in backends.ENV_VARS:
        monkeypatch.delenv(variable, raising=False)
    home = tmp_path / "ember_home"
    monkeypatch.setenv("EMBER_HOME", str(home))
    saved = backends._active, backends._choice
    yield home
    backends._active, backends._choice = saved
    ember.set_backend("numpy")


def _reselect():
    backends._active = None
    return backends.active_choice()


def test_persist_writes_config_keeping_other_keys(clean_env):
    clean_env.mkdir()
    (clean_env / "config.json").write_text(json.dumps({"floatx": "float32"}), encoding="utf-8")
    ember.set_backend("numpy", persist=True)
    assert json.loads((clean_env / "config.json").read_text()) == {"backend": "numpy", "floatx": "float32"}
    choice = _reselect()
    assert (choice.backend, choice.source) == ("numpy", "config")
    assert str(clean_env / "config.json") in choice.reason


def test_without_persist_nothing_is_written(clean_env):
    ember.set_backend("numpy")
    assert not (clean_env / "config.json").exists()
    assert backends.active_choice().source == "call"


def test_env_var_still_beats_the_persisted_choice(clean_env, monkeypatch):
    ember.set_backend("numpy", persist=True)
    monkeypatch.setenv("EMBER_BACKEND", "torch" if backends.is_installed("torch") else "numpy")
    assert _reselect().source == "env"


def test_persist_with_a_damaged_config_changes_nothing(clean_env):
    clean_env.mkdir()
    (clean_env / "config.json").write_text("[1, 2]", encoding="utf-8")
    before = backends.active_choice()
    with pytest.raises(ValueError, match="must hold a JSON object"):
        ember.set_backend("torch" if backends.is_installed("torch") else "numpy", persist=True)
    assert (clean_env / "config.json").read_text() == "[1, 2]"
    assert backends.active_choice() == before


def test_persist_must_be_a_bool(clean_env):
    with pytest.raises(TypeError, match="persist must be True or False, received 'yes'"):
        ember.set_backend("numpy", persist="yes")
    assert not (clean_env / "config.json").exists()


def test_ember_ml_backend_is_an_alias_and_ember_backend_wins(clean_env, monkeypatch):
    monkeypatch.setenv("EMBER_ML_BACKEND", "numpy")
    choice = _reselect()
    assert (choice.backend, choice.source, choice.reason) == ("numpy", "env", "EMBER_ML_BACKEND=numpy")
    other = "mlx" if backends.is_installed("mlx") else "numpy"
    monkeypatch.setenv("EMBER_BACKEND", other)
    choice = _reselect()
    assert choice.backend == other and choice.reason.startswith(f"EMBER_BACKEND={other}")
    assert "ignoring EMBER_ML_BACKEND=numpy" in choice.reason
    monkeypatch.setenv("EMBER_ML_BACKEND", "jax")
    monkeypatch.delenv("EMBER_BACKEND")
    with pytest.raises(ValueError, match="EMBER_ML_BACKEND: unknown backend 'jax'"):
        backends._select_default()


def test_auto_select_explains_itself(clean_env, monkeypatch):
    monkeypatch.setattr(backends, "is_installed", lambda name: name == "numpy")
    choice = backends.auto_select()
    assert choice == backends.Choice("numpy", "cpu", "auto", choice.reason)
    assert "neither torch nor MLX" in choice.reason and backends.AUTO_ORDER in choice.reason
    assert _reselect().source == "auto"


def test_using_backend_restores_the_recorded_choice(clean_env, monkeypatch):
    monkeypatch.setenv("EMBER_ML_BACKEND", "numpy")
    before = _reselect()
    with ember.using_backend("numpy"):
        assert backends.active_choice().source == "call"
    assert backends.active_choice() == before


def test_info_says_where_the_choice_came_from_and_how_to_install(clean_env, monkeypatch):
    monkeypatch.setenv("EMBER_ML_BACKEND", "numpy")
    _reselect()
    monkeypatch.setattr(backends, "is_installed", lambda name: name == "numpy")
    out = io.StringIO()
    print_info(out)
    text = out.getvalue()
    assert "chosen by: environment variable: EMBER_ML_BACKEND=numpy" in text
    assert 'pip install "ember[torch]"' in text and 'pip install "ember[mlx]"' in text
    assert "auto-detection (torch with CUDA, MLX on Apple silicon" in text


def test_config_command_writes_and_prints(clean_env, capsys):
    assert main(["config", "backend", "numpy"]) == 0
    assert json.loads((clean_env / "config.json").read_text()) == {"backend": "numpy"}
    assert main(["config", "backend"]) == 0
    assert capsys.readouterr().out.strip().endswith("numpy")
    with pytest.raises(SystemExit) as exit_info:
        main(["config", "backend", "jax"])
    assert exit_info.value.code == 2
    assert "unknown backend 'jax'" in capsys.readouterr().err
    assert json.loads((clean_env / "config.json").read_text()) == {"backend": "numpy"}


def test_doctor_reports_fixable_problems(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("EMBER_BACKEND", "jax")
    clean_env.mkdir()
    (clean_env / "config.json").write_text("{broken", encoding="utf-8")
    monkeypatch.setattr(backends, "is_installed", lambda name: name == "numpy")
    rows = doctor.diagnose(time_blas=False)
    problems = {row.topic: row for row in rows if row.level == "problem"}
    assert set(problems) == {"EMBER_BACKEND", "config"}
    assert "python -m ember config backend NAME" in problems["config"].fix
    missing = {row.topic: row.fix for row in rows if row.level == "warning"}
    assert missing == {"torch": 'pip install "ember[torch]"', "mlx": 'pip install "ember[mlx]"'}
    monkeypatch.setattr(doctor, "_mlx_blas", lambda time_blas=True: [])
    assert main(["doctor"]) == 1
    assert "2 problem(s)" in capsys.readouterr().out


def test_doctor_names_the_reference_blas_of_the_linux_mlx_wheel(monkeypatch):
    monkeypatch.setattr(doctor.sys, "platform", "linux")
    if not backends.is_installed("mlx"):
        assert doctor._mlx_blas(time_blas=False) == []
        return
    monkeypatch.setattr(doctor, "reference_blas_files", lambda: ["mlx_cpu.libs/libblas.so.3"])
    (row,) = doctor._mlx_blas(time_blas=False)
    assert row.level == "warning" and "libblas.so.3" in row.message and "torch" in row.fix
    monkeypatch.setattr(doctor, "reference_blas_files", lambda: [])
    assert doctor._mlx_blas(time_blas=False)[0].level == "ok"


def test_doctor_sees_a_gpu_torch_cannot_use(monkeypatch):
    if not backends.is_installed("torch"):
        assert doctor._gpu() == []
        return
    torch_backend = backends.load("torch")
    monkeypatch.setattr(doctor, "_nvidia_present", lambda: True)
    monkeypatch.setattr(torch_backend, "build_info", lambda: {"cuda_build": None, "cuda_available": False})
    (row,) = doctor._gpu()
    assert row.level == "problem" and "CPU-only build" in row.message
    monkeypatch.setattr(torch_backend, "build_info", lambda: {"cuda_build": "12.4", "cuda_available": False})
    assert "driver" in doctor._gpu()[0].fix
