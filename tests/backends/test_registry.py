"""Backend selection and switching: priority rules, errors, ``using_backend``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import backends, ops


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No EMBER_BACKEND, and EMBER_HOME pointing at an empty directory."""
    monkeypatch.delenv("EMBER_BACKEND", raising=False)
    home = tmp_path / "ember_home"
    home.mkdir()
    monkeypatch.setenv("EMBER_HOME", str(home))
    return home


def _write_config(home, content):
    path = home / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


# ------------------------------------------------------------------ priority


def test_env_var_selects_backend(clean_env, monkeypatch):
    for name in backends.BACKENDS:
        monkeypatch.setenv("EMBER_BACKEND", name)
        assert backends._select_default() == name


def test_env_var_is_case_insensitive(clean_env, monkeypatch):
    monkeypatch.setenv("EMBER_BACKEND", "NumPy")
    assert backends._select_default() == "numpy"


def test_config_file_selects_backend(clean_env):
    for name in backends.BACKENDS:
        _write_config(clean_env, {"backend": name})
        assert backends._select_default() == name


def test_env_var_beats_config_file(clean_env, monkeypatch):
    _write_config(clean_env, {"backend": "torch"})
    monkeypatch.setenv("EMBER_BACKEND", "mlx")
    assert backends._select_default() == "mlx"
    monkeypatch.setenv("EMBER_BACKEND", "numpy")
    assert backends._select_default() == "numpy"


def test_empty_env_var_falls_through_to_config(clean_env, monkeypatch):
    _write_config(clean_env, {"backend": "mlx"})
    monkeypatch.setenv("EMBER_BACKEND", "")
    assert backends._select_default() == "mlx"


def test_no_env_no_config_auto_detects(clean_env):
    assert backends._select_default() == backends._auto_detect()


def test_config_without_backend_key_auto_detects(clean_env):
    _write_config(clean_env, {"floatx": "float32"})
    assert backends._select_default() == backends._auto_detect()


def test_config_path_defaults_to_home_dot_ember(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBER_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert backends.config_path() == os.path.join(str(tmp_path), ".ember", "config.json")


def test_config_path_follows_ember_home(clean_env):
    assert backends.config_path() == os.path.join(str(clean_env), "config.json")


def _fake_installed(monkeypatch, installed):
    monkeypatch.setattr(backends, "is_installed", lambda name: name in installed)


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ({"numpy"}, "numpy"),
        ({"numpy", "mlx"}, "mlx"),
        ({"numpy", "torch"}, "torch"),
        ({"numpy", "torch", "mlx"}, "torch"),  # off Apple silicon, torch CPU beats MLX CPU
    ],
)
def test_auto_detect_order_without_accelerators(clean_env, monkeypatch, installed, expected):
    _fake_installed(monkeypatch, installed)
    monkeypatch.setattr(sys, "platform", "linux")
    if "torch" in installed:
        torch = pytest.importorskip("torch")
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert backends._select_default() == expected


def test_auto_detect_prefers_mlx_on_apple_silicon_without_cuda(clean_env, monkeypatch):
    torch = pytest.importorskip("torch")

    _fake_installed(monkeypatch, {"numpy", "torch", "mlx"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert backends._select_default() == "mlx"


def test_auto_detect_prefers_torch_with_cuda(clean_env, monkeypatch):
    torch = pytest.importorskip("torch")

    _fake_installed(monkeypatch, {"numpy", "torch", "mlx"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert backends._select_default() == "torch"


def test_explicit_set_backend_beats_env_and_config(clean_env, monkeypatch):
    _write_config(clean_env, {"backend": "torch"})
    monkeypatch.setenv("EMBER_BACKEND", "mlx")
    ember.set_backend("numpy")
    assert ember.get_backend() == "numpy"
    assert isinstance(ops.zeros((1,)), np.ndarray)


def test_first_use_without_explicit_choice_follows_env(clean_env, monkeypatch):
    """With no backend chosen yet, the first use selects by the priority rules."""
    monkeypatch.setenv("EMBER_BACKEND", "numpy")
    _write_config(clean_env, {"backend": "torch"})
    previous = backends._active
    backends._active = None
    try:
        assert ember.get_backend() == "numpy"
    finally:
        backends._active = None
        ember.set_backend(previous.name if previous is not None else "numpy")


def _run_python(code, env_updates, home):
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_BACKEND", "EMBER_HOME")}
    env.update(env_updates)
    env["EMBER_HOME"] = str(home)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return result


def test_env_var_in_fresh_process(clean_env):
    _write_config(clean_env, {"backend": "torch"})
    result = _run_python("import ember; print(ember.get_backend())", {"EMBER_BACKEND": "numpy"}, clean_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "numpy"


def test_config_file_in_fresh_process(clean_env):
    _write_config(clean_env, {"backend": "numpy"})
    result = _run_python("import ember; print(ember.get_backend())", {}, clean_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "numpy"


# -------------------------------------------------------------------- errors


def test_unknown_backend_name_is_value_error_naming_it_and_valid_ones():
    with pytest.raises(ValueError) as info:
        ember.set_backend("jax")
    assert str(info.value) == "unknown backend 'jax'; expected one of 'numpy', 'torch', 'mlx'"  # no stray prefix
    assert ember.get_backend() == "numpy"


@pytest.mark.parametrize("call", [ember.set_backend, backends.load, backends.is_installed,
                                  lambda name: ember.using_backend(name).__enter__()])
def test_a_misspelt_backend_gets_a_suggestion(call):
    with pytest.raises(ValueError, match=r"^unknown backend 'pytorch' \(did you mean 'torch'\?\); expected one of "
                                         r"'numpy', 'torch', 'mlx'$"):
        call("pytorch")
    assert ember.get_backend() == "numpy"


@pytest.mark.parametrize("bad", ["", "tensorflow", None, 3])
def test_unknown_backend_values(bad):
    with pytest.raises(ValueError):
        ember.set_backend(bad)
    assert ember.get_backend() == "numpy"


def test_unknown_backend_in_env_var(clean_env, monkeypatch):
    monkeypatch.setenv("EMBER_BACKEND", "jax")
    with pytest.raises(ValueError) as info:
        backends._select_default()
    assert "EMBER_BACKEND" in str(info.value) and "jax" in str(info.value)


def test_unknown_backend_in_config_names_path(clean_env):
    path = _write_config(clean_env, {"backend": "jax"})
    with pytest.raises(ValueError) as info:
        backends._select_default()
    assert str(path) in str(info.value) and "jax" in str(info.value)


@pytest.mark.parametrize("content", ["{not json", "", "[1, 2"])
def test_bad_config_file_is_value_error_naming_path(clean_env, content):
    path = _write_config(clean_env, content)
    with pytest.raises(ValueError) as info:
        backends._select_default()
    assert str(path) in str(info.value)


@pytest.mark.parametrize("missing", ["torch", "mlx"])
def test_missing_backend_names_the_extra(monkeypatch, missing):
    monkeypatch.setattr(backends, "is_installed", lambda name: name != missing)
    monkeypatch.setattr(backends, "_loaded", {k: v for k, v in backends._loaded.items() if k != missing})
    with pytest.raises(backends.BackendNotAvailableError) as info:
        ember.set_backend(missing)
    assert f'pip install "ember[{missing}]"' in str(info.value)
    assert isinstance(info.value, ImportError)
    assert ember.BackendNotAvailableError is backends.BackendNotAvailableError
    # a failing call changes no state
    assert ember.get_backend() == "numpy"
    assert isinstance(ops.zeros((1,)), np.ndarray)
    with pytest.raises(backends.BackendNotAvailableError):
        backends.available_devices(missing)
    assert missing not in backends.available()


def test_available_lists_installed_backends():
    names = backends.available()
    assert "numpy" in names
    assert set(names) <= set(backends.BACKENDS)
    for name in names:
        assert backends.is_installed(name)


# -------------------------------------------------------------- using_backend


def test_using_backend_switches_and_restores(backend):
    for other in backends.available():
        with ember.using_backend(other) as module:
            assert ember.get_backend() == other
            assert module.name == other
        assert ember.get_backend() == backend


def test_using_backend_restores_on_exception(backend):
    for other in backends.available():
        with pytest.raises(RuntimeError, match="boom"):
            with ember.using_backend(other):
                assert ember.get_backend() == other
                raise RuntimeError("boom")
        assert ember.get_backend() == backend
        assert type(ops.zeros((1,))) is type(backends.current().op_tables()["core"]["zeros"]((1,)))


def test_using_backend_nests(backend):
    others = backends.available()
    with ember.using_backend(others[0]):
        with ember.using_backend(others[-1]):
            assert ember.get_backend() == others[-1]
        assert ember.get_backend() == others[0]
    assert ember.get_backend() == backend


def test_using_unknown_backend_leaves_active_one(backend):
    with pytest.raises(ValueError):
        with ember.using_backend("jax"):
            pass  # pragma: no cover
    assert ember.get_backend() == backend


def test_set_backend_same_name_is_a_no_op(backend):
    before = ops.zeros
    ember.set_backend(backend)
    assert ops.zeros is before


def test_listener_sees_every_switch():
    seen = []

    def listener(module):
        seen.append(module.name)

    backends.on_backend_change(listener)
    try:
        assert seen == ["numpy"]  # called at once with the active backend
        for other in backends.available():
            ember.set_backend(other)
        ember.set_backend("numpy")
    finally:
        backends._listeners.remove(listener)
    assert seen[-1] == "numpy"
    assert set(seen) == set(backends.available())


def test_ops_work_right_after_import_in_a_fresh_process():
    """Importing Ember selects no backend (no torch or MLX import: ``import ember`` stays cheap); the
    first op looked up selects the default one (no explicit set_backend needed)."""
    import subprocess
    import sys

    code = ("import sys, ember; loaded = [m for m in ('torch', 'mlx') if m in sys.modules]; "
            "print(loaded, ember.ops.shape(ember.ops.nn.relu(ember.ops.zeros(2))), ember.get_backend())")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("EMBER_BACKEND", "EMBER_ML_BACKEND")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**env, "EMBER_HOME": "/nonexistent-ember-home"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "(2,)", backends.auto_select().backend]
