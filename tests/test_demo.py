"""The main demo (``python -m ember demo``, :mod:`ember.demo`): trains on every installed backend,
moves a checkpoint between them, and exits 1 naming the backend when anything disagrees.

References are independent of the demo: scikit-learn's digits loaded here, NumPy arithmetic
written in the test, and PNG's file signature.
"""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import backends, demo


def _run(**kwargs):
    out = io.StringIO()
    code = demo.run_demo(out=out, **kwargs)
    return code, out.getvalue()


def test_demo_on_every_installed_backend_agrees_and_exits_0():
    ember.set_backend("numpy")
    code, text = _run(epochs=3)
    assert code == 0, text
    installed = backends.available()
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("backend"))
    assert lines[header].split() == ["backend", "device", "epochs", "train", "loss", "test", "accuracy", "s/epoch"]
    accuracies, losses = [], []
    for name, line in zip(installed, lines[header + 1:]):
        cells = line.split()
        assert cells[0] == name and cells[1] == backends.default_device(name) and cells[2] == "3"
        losses.append(float(cells[3]))
        accuracies.append(float(cells[4]))
        assert float(cells[5]) > 0
    # Same initial weights, same shuffling: every backend follows the same trajectory.
    assert min(accuracies) >= 0.85 and max(losses) - min(losses) < 1e-3
    agreement = next(i for i, line in enumerate(lines) if line.startswith("loaded on"))
    rows = [line.split() for line in lines[agreement + 1:agreement + 1 + len(installed)]]
    assert [row[0] for row in rows] == installed
    for row in rows:
        assert float(row[1]) <= demo.PREDICTION_ATOL and row[2] == "100.00%" and row[3] == "OK"
    assert float(rows[0][1]) == 0.0  # reloaded on the backend that saved it: bit-equal
    assert "max |diff| <= 1e-05" in text and "\nOK: " in text and "FAILED" not in text
    assert ember.get_backend() == "numpy"  # restored


def test_a_disagreeing_backend_gives_exit_1_and_is_named(monkeypatch, torch_backend):
    ember.set_backend("numpy")
    honest = demo.predict

    def perturbed(model, x):  # torch's loaded model predicts slightly off
        probabilities = honest(model, x)
        return probabilities + 1e-3 if ember.get_backend() == "torch" else probabilities

    monkeypatch.setattr(demo, "predict", perturbed)
    code, text = _run(backends=["numpy", "torch"], epochs=1)
    assert code == 1
    table = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith(("numpy ", "torch "))
             and line.split()[-1] in ("OK", "MISMATCH")}
    assert table["numpy"][-1] == "OK" and table["torch"][-1] == "MISMATCH"
    assert float(table["torch"][1]) == 1e-3  # exact: 1e-3 give or take 1e-6 of rounding, printed "1.0e-03"
    failed = [line for line in text.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "torch" in failed[0] and "numpy" in failed[0] and "1e-05" in failed[0]
    assert "\nOK: " not in text
    assert ember.get_backend() == "numpy"  # restored after a failure too


def test_an_accuracy_below_the_floor_gives_exit_1_naming_the_backend():
    code, text = _run(backends="numpy", epochs=1, min_accuracy=0.99)
    assert code == 1
    assert any(line.startswith("FAILED  numpy: test accuracy") and "below 0.99" in line for line in text.splitlines())


def test_accuracy_floor_is_0_9_at_the_default_epochs():
    assert demo.DEFAULT_EPOCHS >= 1 and demo.MIN_ACCURACY == 0.9


@pytest.mark.parametrize("bad", ["tensorflow", "numpy,jax", ""])
def test_unknown_backend_lists_the_valid_names(bad):
    with pytest.raises(ValueError, match="valid names: numpy, torch, mlx"):
        demo.run_demo(backends=[bad], epochs=1, out=io.StringIO())


@pytest.mark.parametrize("epochs", [0, -1, 1.5, True])
def test_epochs_must_be_a_positive_int(epochs):
    with pytest.raises(ValueError, match=r"--epochs must be an integer >= 1"):
        demo.run_demo(backends=["numpy"], epochs=epochs, out=io.StringIO())


def test_batch_size_must_be_a_positive_int():
    with pytest.raises(ValueError, match=r"--batch-size must be an integer >= 1, received 0"):
        demo.run_demo(backends=["numpy"], batch_size=0, out=io.StringIO())


def test_resolve_backends_splits_commas_keeps_order_and_drops_repeats():
    installed = backends.available()
    assert demo.resolve_backends(None) == installed
    assert demo.resolve_backends([",".join(reversed(installed)), installed[0].upper()]) == installed[::-1]


def test_a_missing_backend_names_the_extra(monkeypatch):
    monkeypatch.setattr(backends, "is_installed", lambda name: name == "numpy")
    monkeypatch.setattr(backends, "_loaded", {})
    with pytest.raises(backends.BackendNotAvailableError, match=r'pip install "ember\[mlx\]"'):
        demo.resolve_backends(["numpy", "mlx"])


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (the [plot] extra)")
    code, text = _run(backends=["numpy"], epochs=2, plot=tmp_path / "history.png")
    assert code == 0, text
    data = (tmp_path / "history.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert f"written to {tmp_path / 'history.png'}" in text


def test_plot_into_a_missing_folder_fails_before_training(tmp_path):
    out = io.StringIO()
    with pytest.raises(ValueError, match="--plot: the directory"):
        demo.run_demo(backends=["numpy"], epochs=1, plot=tmp_path / "missing" / "h.png", out=out)
    assert out.getvalue() == ""


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r'pip install "ember\[examples\]"'):
        demo.load_data()


def test_load_data_is_the_digits_scaled_and_split_by_class():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x_train, y_train, x_test, y_test = demo.load_data()
    assert x_train.dtype == np.float32 and y_train.dtype == np.int32
    assert len(x_train) + len(x_test) == len(digits.target) and x_train.shape[1] == 64
    assert x_train.min() == 0.0 and x_train.max() == 1.0
    # every image lands in exactly one split, with its own label, pixels divided by 16
    reference = {tuple(row): label for row, label in zip(digits.data / 16.0, digits.target)}
    both = np.concatenate([x_train, x_test]).astype(np.float64)
    labels = np.concatenate([y_train, y_test])
    assert sorted(map(tuple, both)) == sorted(map(tuple, digits.data / 16.0))
    assert all(reference[tuple(row)] == label for row, label in zip(both, labels))
    counts, test_counts = np.bincount(digits.target), np.bincount(y_test)
    assert np.all(np.abs(test_counts - 0.2 * counts) <= 0.5)
    assert all(np.array_equal(a, b) for a, b in zip(demo.load_data(), (x_train, y_train, x_test, y_test)))


def test_stratified_split_is_a_seeded_partition():
    labels = np.repeat(np.arange(3), [10, 20, 30])
    train, test = demo.stratified_split(labels, 0.3, seed=5)
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(60))
    assert np.bincount(labels[test]).tolist() == [3, 6, 9]
    again = demo.stratified_split(labels, 0.3, seed=5)
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])
    assert not np.array_equal(test, demo.stratified_split(labels, 0.3, seed=6)[1])


def test_compare_predictions():
    reference = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], np.float32)
    same = demo.compare_predictions(reference, reference.copy())
    assert same.max_abs_diff == 0.0 and same.argmax_agreement == 1.0 and same.ok
    close = demo.compare_predictions(reference, reference + np.float32(4e-6))
    # float32 rounds each value + 4e-6 (values <= 0.7) by <= ulp(0.7) / 2 = 3e-8: 0.75% of 4e-6
    assert close.ok and close.max_abs_diff == pytest.approx(4e-6, rel=1e-2)
    off = demo.compare_predictions(reference, reference + np.array([[0, 0, 0], [0, 2e-5, 0]], np.float32))
    assert not off.ok and off.argmax_agreement == 1.0
    flipped = demo.compare_predictions(reference, np.array([[0.2, 0.7, 0.1], [0.1, 0.3, 0.6]]), atol=1.0)
    assert not flipped.ok and flipped.argmax_agreement == 0.5
    assert not demo.compare_predictions(reference, reference[:1]).ok  # wrong shape


def test_format_table_aligns_text_left_and_numbers_right():
    text = demo.format_table(["backend", "loss", "result"], [["numpy", "0.5", "OK"], ["torch", "10.25", "MISMATCH"]])
    assert text.splitlines() == [
        "backend   loss  result",
        "numpy      0.5  OK",
        "torch    10.25  MISMATCH",
    ]


def test_build_model_gives_identical_initial_weights_on_every_backend():
    import optree

    weights = {}
    for name in backends.available():
        with ember.using_backend(name):
            ember.layers.Dense(1)  # bumps the auto-name counter: the demo's named layers must not care
            model = demo.build_model()
            model.build(seed=demo.SEED)
            weights[name] = [np.asarray(ember.ops.to_numpy(leaf)) for leaf in optree.tree_leaves(model.state)]
    first = next(iter(weights.values()))
    for name, leaves in weights.items():
        assert all(np.array_equal(a, b) for a, b in zip(leaves, first)), name
    assert sum(leaf.size for leaf in first) == 64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10


def test_command_line_demo_on_numpy_exits_0():
    result = subprocess.run([sys.executable, "-m", "ember", "demo", "--epochs", "1", "--backend", "numpy"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "numpy    cpu          1" in result.stdout and "\nOK: " in result.stdout
