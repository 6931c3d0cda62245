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

import ast
import functools
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
from tests.helpers import EPS32
from tests.test_readme import quickstart_code

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the dev extra installs tomli
    tomllib = None

TUTORIALS_DIR = pathlib.Path(__file__).resolve().parents[1] / "tutorials"
TUTORIALS = sorted(path.name for path in TUTORIALS_DIR.glob("[0-9][0-9]_*.py"))
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
    # float32 explained-variance ratio: 10 eps relative, 100 eps absolute (tests/features/test_pca.py's model)
    np.testing.assert_allclose(r["raw_first_component_variance"], PCA(1).fit(x_train).explained_variance_ratio_[0],
                               rtol=10 * EPS32, atol=100 * EPS32)
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


def check_spatial_spiking_causal(r, backend):
    # Every fast-mode number below is the same on numpy, torch and mlx (measured).
    assert_loss_fell(r["first_loss"], r["final_loss"], 0.75)  # 2.37 -> 1.45 (the loss includes the penalty)
    assert r["test_accuracy"] >= 0.7, r                       # 0.822
    assert r["test_accuracy_no_penalty"] >= 0.7, r            # 0.807
    # The same initial weights in both runs; the penalty moves recurrent |W| onto grid neighbours.
    assert r["local_before"] == r["local_before_no_penalty"] and 0.15 < r["local_before"] < 0.19, r  # 0.1672
    assert r["local_after"] > r["local_before"] + 0.02, r                # 0.211 (0.64 in a full run)
    assert r["local_after"] > r["local_after_no_penalty"] + 0.02, r      # 0.166 without the penalty
    assert r["local_causal_links"] > r["local_causal_links_no_penalty"], r  # 0.200 vs 0.187
    assert r["causal_links"] > 0 and r["spikes"] > 0, r       # 17096 links, 462 spikes
    # The record's spikes give the model's logits (float32 matmul of 36 rates: measured <= 2.4e-7).
    assert r["record_logit_error"] < 1e-5, r
    assert 0 <= r["top_pixel"] < 64 and r["top_pixel_active"] is True, r  # pixel 21, (2, 5)
    assert 0 <= r["top_neuron"] < 36, r                                  # neuron 8
    # Removing the pixels gradient x input ranks highest changes the spikes and the decision most.
    assert r["ablation_top_count_change"] > 1.5 * r["ablation_random_count_change"], r  # 20.8 vs 9.1
    assert r["ablation_top_count_change"] > r["ablation_least_count_change"], r        # 20.8 vs 6.9
    assert r["ablation_top_logit_change"] > 2 * r["ablation_random_logit_change"], r   # 0.330 vs 0.061
    assert r["gradient_ablation_correlation"] > 0.6, r                                 # 0.898
    # The same weights give the same causal record on every installed backend.
    assert r["record_differs_across_backends"] == 0, r


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
    "10_spatial_spiking_causal.py": check_spatial_spiking_causal,
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
    "10_spatial_spiking_causal.py": ["10_history.png", "10_raster.png", "10_space.png", "10_pixels.png"],
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
    assert f"== {name[:2]} " in out  # the results table was printed
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


# ------------------------------------------------------------------------------- the examples extra
ROOT = TUTORIALS_DIR.parent
# Import names whose distribution is named otherwise, for when the distribution is not installed here.
DISTRIBUTION_OF = {"sklearn": "scikit-learn", "PIL": "pillow", "yaml": "pyyaml"}


def _project_name(requirement: str) -> str:
    """``"scikit-learn>=1.3"`` -> ``"scikit-learn"`` (PEP 503 normalised; extras, versions and markers dropped)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group(0)
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports(source: str, local: set[str]) -> set[str]:
    """The top-level names ``source`` imports (function-local imports included) that are neither the
    standard library, Ember, nor a module of ``local``."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name != "ember" and name not in local}


@functools.cache
def _installed_distributions() -> dict:
    """``{top-level module: [distribution, ...]}`` of this environment (a scan of every installed
    distribution's file list: seconds, so once per process)."""
    return importlib.metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    """The distributions that provide the top-level module ``module`` (normalised names)."""
    installed = _installed_distributions().get(module)
    return {_project_name(name) for name in installed or [DISTRIBUTION_OF.get(module, module)]}


def test_the_examples_extra_covers_what_the_tutorials_demo_and_quickstart_import():
    """``pip install -e ".[torch,examples]"`` runs the README's quickstart, every tutorial and the demo:
    each third-party package they import is a core dependency or in the ``examples`` extra."""
    if tomllib is None:
        pytest.skip("reading pyproject.toml needs tomli on Python 3.10 (in the dev extra)")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    allowed = {_project_name(r) for r in project["dependencies"] + project["optional-dependencies"]["examples"]}
    sources = {"README.md quickstart": quickstart_code()}
    for path in [*sorted(TUTORIALS_DIR.glob("*.py")), *sorted((ROOT / "ember" / "demo").glob("*.py"))]:
        sources[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    local = {path.stem for path in TUTORIALS_DIR.glob("*.py")}
    missing = {where: sorted(name for name in _third_party_imports(source, local) if not _distributions(name) & allowed)
               for where, source in sources.items()}
    missing = {where: names for where, names in missing.items() if names}
    assert not missing, f"imports covered neither by the core dependencies nor by the examples extra: {missing}"
    imported = set().union(*(_third_party_imports(source, local) for source in sources.values()))
    assert {"sklearn", "statsmodels", "matplotlib"} <= imported  # the scan sees what the tutorials import


def test_the_readme_installs_the_examples_extra():
    install = (ROOT / "README.md").read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    assert 'pip install -e ".[torch,examples]"' in install
