"""Every tutorial runs (``--fast``) on every backend and learns what it claims to teach.

Each tutorial in ``tutorials/`` is imported by path and its ``main(argv) -> dict`` is called in
this process with ``["--backend", backend, "--fast"]``; the returned numbers are checked
against floors stated here (measured values in the comments, so a regression is visible),
and, where a library computes the same quantity, against that library (scikit-learn's PCA).
One test runs a tutorial as a script in a subprocess, as a user would.

Adding ``tutorials/08_x.py`` without a check in ``CHECKS`` (and a line in
``tutorials/README.md``) fails ``test_every_tutorial_is_checked``. On NumPy the tutorials that
draw also get ``--plot DIR`` and their figures are read back.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember

TUTORIALS_DIR = pathlib.Path(__file__).resolve().parents[1] / "tutorials"
TUTORIALS = sorted(path.name for path in TUTORIALS_DIR.glob("0*.py"))
_modules: dict[str, object] = {}


def load_tutorial(name):
    """Import ``tutorials/<name>`` by path (once per process; file names are not module names)."""
    if name not in _modules:
        if str(TUTORIALS_DIR) not in sys.path:
            sys.path.insert(0, str(TUTORIALS_DIR))  # the tutorials import their helper `_common`
        spec = importlib.util.spec_from_file_location(f"tutorial_{pathlib.Path(name).stem}", TUTORIALS_DIR / name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses (custom layers) look their module up there
        spec.loader.exec_module(module)
        _modules[name] = module
    return _modules[name]


def assert_loss_fell(first, final, factor):
    assert final < factor * first, f"loss fell from {first:.4f} to only {final:.4f} (wanted < {factor} x first)"


# ----------------------------------------------------------------------------- per-tutorial checks
# Fast-mode values measured on every backend (same seeds) are in the comments.

def check_quickstart(r, backend):
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 1.72 -> 0.45
    assert r["test_accuracy"] >= 0.85, r                    # 0.91-0.93
    assert r["epochs"] == 3 and r["backend"] == backend


def check_functional(r, backend):
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 1.77 -> 0.34
    assert r["test_digit_accuracy"] >= 0.85, r              # 0.95
    assert r["test_odd_accuracy"] >= 0.8, r                 # 0.91


def check_custom_loop(r, backend):
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 0.68 -> 0.14
    assert r["test_accuracy"] >= 0.9, r                     # 0.95
    assert r["reloaded_agree"] is True  # the registered custom layer survives save/load


def check_cnn(r, backend):
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 2.16 -> 0.29
    assert r["test_accuracy"] >= 0.8, r                     # 0.90


def check_sunspots(r, backend):
    # Persistence on the standardized test years: 0.954 (computed by the tutorial, checked here).
    assert 0.9 < r["persistence_mse"] < 1.0
    assert_loss_fell(r["cfc_first_loss"], r["cfc_final_loss"], 0.5)  # 0.79 -> 0.17
    assert_loss_fell(r["ltc_first_loss"], r["ltc_final_loss"], 0.5)  # 0.75 -> 0.21
    # Both forecasters beat persistence by a clear margin (CfC 0.62, LTC 0.68).
    assert r["cfc_test_mse"] < 0.85 * r["persistence_mse"], r
    assert r["ltc_test_mse"] < 0.85 * r["persistence_mse"], r


def check_checkpoints(r, backend):
    assert r["trained_on"] == backend and r["backends"] == ember.backends.available()
    # Weights arrive bit for bit on every backend; predictions differ only by float32 rounding of
    # each backend's own matmul (measured <= 6e-7), so the classes are identical.
    assert r["weights_identical_everywhere"] is True
    assert r["same_classes_everywhere"] is True
    assert r["max_prediction_difference"] < 1e-5, r
    for name, row in r["per_backend"].items():
        assert row["test_accuracy"] == r["test_accuracy"], (name, row)  # 0.93-0.95
    assert r["test_accuracy"] >= 0.85
    # 2 epochs + save + load + 2 epochs == 4 epochs, bit for bit (as tests/saving/test_resume.py).
    assert r["resume_max_weight_difference"] == 0.0
    assert r["resumed_final_loss"] == r["straight_final_loss"]


def check_features(r, backend):
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    # Independent reference: scikit-learn (float64) on the tutorial's training split.
    data = load_breast_cancer()
    x_train = train_test_split(data.data.astype("float32"), test_size=0.25, random_state=0,
                               stratify=data.target)[0].astype(np.float64)
    ratios = PCA().fit(StandardScaler().fit_transform(x_train)).explained_variance_ratio_
    np.testing.assert_allclose(r["explained_variance_ratio"], ratios, rtol=1e-4, atol=1e-6)  # float32 PCA
    np.testing.assert_allclose(r["raw_first_component_variance"], PCA(1).fit(x_train).explained_variance_ratio_[0],
                               rtol=1e-5)
    assert r["pca95_components"] == int(np.searchsorted(np.cumsum(ratios), 0.95) + 1) == 10
    # Standardizing is what makes the classifier work (raw: stuck on the majority class, 0.63).
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 0.35 -> 0.07
    assert r["standardized_accuracy"] >= 0.9, r              # 0.95
    assert r["pca95_accuracy"] >= 0.9, r                     # 0.94
    assert r["pca2_accuracy"] >= 0.88, r                     # 0.92
    assert r["raw_accuracy"] < r["standardized_accuracy"] - 0.2


def check_data_parallel(r, backend):
    # In one process here; tests/distribute/test_data_parallel.py runs it under torchrun with 2 ranks.
    assert r["processes"] == 1 and r["backend"] == backend
    assert r["test_accuracy"] >= 0.85, r                                  # 0.93 on every backend
    assert abs(r["predict_accuracy"] - r["test_accuracy"]) < 1e-6         # predict and evaluate agree
    assert r["reloaded_same_predictions"] is True


def check_spiking(r, backend):
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.5)  # 1.07-1.10 -> 0.18
    assert r["test_accuracy"] >= 0.85, r                     # 0.956-0.958
    assert 0.05 < r["mean_firing_rate"] < 0.95, r            # 0.40-0.42: the neurons spike, not saturate
    assert r["surrogate_at_zero"] == 1.0                     # 1 / (1 + 5 |0|)^2


CHECKS = {
    "01_quickstart.py": check_quickstart,
    "02_functional_api.py": check_functional,
    "03_custom_layer_and_loop.py": check_custom_loop,
    "04_cnn_digits.py": check_cnn,
    "05_ncp_sunspots.py": check_sunspots,
    "06_checkpoints.py": check_checkpoints,
    "07_features_pca.py": check_features,
    "08_data_parallel.py": check_data_parallel,
    "09_spiking_surrogate.py": check_spiking,
}


# ------------------------------------------------------------------------------------------ tests

def test_every_tutorial_is_checked():
    """A new tutorial must get a check here and a line in tutorials/README.md."""
    assert TUTORIALS == sorted(CHECKS), f"tutorials {TUTORIALS} vs checks {sorted(CHECKS)}"
    readme = (TUTORIALS_DIR / "README.md").read_text(encoding="utf-8")
    missing = [name for name in TUTORIALS if f"tutorials/{name}" not in readme]
    assert not missing, f"tutorials/README.md does not mention {missing}"


# The figures each tutorial writes with --plot DIR (06 has no --plot).
PLOTS = {
    "01_quickstart.py": ["01_history.png"],
    "02_functional_api.py": ["02_history.png"],
    "03_custom_layer_and_loop.py": ["03_loss.png"],
    "04_cnn_digits.py": ["04_history.png"],
    "05_ncp_sunspots.py": ["wiring.png", "05_forecast.png"],
    "07_features_pca.py": ["07_pca.png"],
    "09_spiking_surrogate.py": ["09_history.png"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_and_learns(name, backend, capsys, tmp_path):
    """``main(["--backend", backend, "--fast"])``; on NumPy also ``--plot DIR`` (figures are backend-independent)."""
    argv = ["--backend", backend, "--fast"]
    draw = backend == "numpy" and name in PLOTS
    if draw:
        argv += ["--plot", str(tmp_path)]
    ember.clear_session()
    results = load_tutorial(name).main(argv)
    out = capsys.readouterr().out
    assert "== 0" in out  # the results table was printed
    assert ember.get_backend() == backend
    CHECKS[name](results, backend)
    if draw:
        import matplotlib.pyplot as plt  # the [plot] extra, part of [dev]

        for figure in PLOTS[name]:
            image = plt.imread(tmp_path / figure)
            assert image.shape[0] > 100 and image.shape[1] > 100, figure


def test_quickstart_runs_as_a_script():
    """What a user types: ``python tutorials/01_quickstart.py --backend numpy --fast``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("EMBER_BACKEND", None)
    completed = subprocess.run(
        [sys.executable, str(TUTORIALS_DIR / "01_quickstart.py"), "--backend", "numpy", "--fast"],
        cwd=TUTORIALS_DIR.parent, env=env, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert 'Model: "digits_mlp"' in out and "Total params: 4,810" in out  # model.summary()
    assert "History (one row per epoch):" in out
    accuracy = float(out.split("test_accuracy", 1)[1].split()[0])
    assert accuracy >= 0.85, out
