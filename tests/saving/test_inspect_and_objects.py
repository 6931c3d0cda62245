"""``python -m ember inspect``, ``save_object``/``load_object`` for feature transformers, and the
format's building blocks (state paths, lists, empty groups, arrays from another backend)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import backends, features, layers, ops
from ember.__main__ import inspect_file
from ember.saving import CheckpointError, load_object, save_object
from ember.saving import format as fmt
from ember.saving.reader import CheckpointReader
from ember.saving.writer import write_checkpoint
from tests.saving.models import assert_trees_bit_equal, build_state, make_model, to_numpy_tree
from tests.tolerances import FLOAT64


def test_inspect_prints_metadata_and_variable_tree(tmp_path, capsys):
    model = make_model()
    build_state(model)
    model.compile(optimizer="adam", loss="mse")
    path = tmp_path / "mixed.h5"
    model.save(path)
    assert inspect_file(str(path)) == 0
    out = capsys.readouterr().out
    for text in ("ember_format:   ember.checkpoint", "format_version: 2", "kind:           model",
                 "backend:        numpy", "device:         cpu", "created:", "ember>Model 'mixed'",
                 "optimizer=Adam, loss='mse'"):
        assert text in out, text
    lines = [line.split() for line in out.splitlines()]
    assert ["state/"] in lines and ["params/"] in lines and ["bf16/"] in lines
    assert ["kernel", "(6,", "3)", "bfloat16"] in lines
    assert ["keep", "(6,)", "bool"] in lines and ["offset", "(6,)", "int32"] in lines

    bad = tmp_path / "bad.h5"
    bad.write_bytes(path.read_bytes()[:1000])
    assert inspect_file(str(bad)) == 1
    err = capsys.readouterr().err
    assert "bad.h5" in err and "truncated" in err


def _summary_rows(model, capsys):
    """The layer rows ``model.summary()`` prints (between the double rules)."""
    model.summary()
    lines = capsys.readouterr().out.splitlines()
    rules = [i for i, line in enumerate(lines) if line and set(line) == {"="}]
    return lines[rules[1] + 1:rules[2]]


def _sequential():
    return ember.Sequential([ember.Input((4,)), layers.Dense(3), layers.Dense(2)])


def _functional():
    inputs = ember.Input((4,))
    return ember.Model(inputs, layers.Dense(2)(layers.Dense(3)(inputs)))


def _sequential_without_input():
    return ember.Sequential([layers.Dense(3), layers.Dense(2)])


@pytest.mark.parametrize("make", [_sequential, _functional, _sequential_without_input])
def test_inspect_counts_the_layers_summary_lists(make, tmp_path, capsys):
    """A Sequential's ``Input`` is saved as an InputLayer entry but is not one of its layers (Keras's
    ``summary`` leaves it out too); a functional model's InputLayers are (``summary`` lists them)."""
    model = make()
    if not model.built:
        model.build((None, 4), seed=0)
    count = len(_summary_rows(model, capsys))
    assert count == len(model.layers)
    path = tmp_path / "m.h5"
    model.save(path)
    assert inspect_file(str(path)) == 0
    assert f"'{model.name}', {count} layers\n" in capsys.readouterr().out


def test_inspect_command_line(tmp_path):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(3, name="dense")], name="cli")
    model.build(seed=0)
    model.save_weights(tmp_path / "cli.weights.h5")
    result = subprocess.run([sys.executable, "-m", "ember", "inspect", str(tmp_path / "cli.weights.h5")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "kind:           weights" in result.stdout and "Sequential 'cli' (weights only)" in result.stdout
    assert "kernel  (2, 3)  float32" in result.stdout
    assert "variables (2 arrays, 9 values, 36 bytes)" in result.stdout


def test_fitted_transformers_round_trip_on_every_backend(tmp_path):
    data = np.random.default_rng(0).normal(size=(20, 4)) * [1.0, 5.0, 0.1, 2.0]
    with ember.using_backend("numpy"):
        pca = features.PCA(n_components=2).fit(data)
        scaler = features.StandardScaler().fit(data)
        save_object(pca, tmp_path / "pca.h5")
        save_object(scaler, tmp_path / "scaler.h5")
        save_object(features.MinMaxScaler(), tmp_path / "unfitted.h5")
        expected = ops.to_numpy(pca.transform(scaler.transform(data)))
        pca_state = to_numpy_tree(pca.state)
    for target in backends.available():
        with ember.using_backend(target):
            pca_back = load_object(tmp_path / "pca.h5")
            scaler_back = load_object(tmp_path / "scaler.h5")
            assert isinstance(pca_back, features.PCA) and pca_back.n_components == 2
            assert_trees_bit_equal(to_numpy_tree(pca_back.state), pca_state)
            got = ops.to_numpy(pca_back.transform(scaler_back.transform(data)))
            np.testing.assert_allclose(got, expected, **FLOAT64)  # float64 data: float64 on every backend
            unfitted = load_object(tmp_path / "unfitted.h5")
            assert isinstance(unfitted, features.MinMaxScaler) and not unfitted.is_fitted
    with pytest.raises(TypeError, match="get_config"):
        save_object(object(), tmp_path / "x.h5")
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="d")])
    model.build(seed=0)
    save_object(model, tmp_path / "model.h5")
    assert isinstance(load_object(tmp_path / "model.h5"), ember.Sequential)
    with pytest.raises(CheckpointError, match="save_object.*load_object"):
        model.load_weights(tmp_path / "pca.h5")


def test_trees_with_lists_empty_groups_and_foreign_arrays(tmp_path):
    tree = {"a": [np.arange(3, dtype=np.int64), {"b": np.ones((2, 2), np.float16)}], "empty": {}, "z": np.float64(2.5)}
    write_checkpoint(tmp_path / "t.h5", "object", trees={"state": tree}, documents={"config": None})
    with CheckpointReader(tmp_path / "t.h5") as ckpt:
        back = ckpt.tree("state")
    assert isinstance(back["a"], list) and back["empty"] == {}
    assert back["z"].shape == () and back["z"].dtype == np.float64
    assert_trees_bit_equal(back, {k: v for k, v in tree.items()})

    # A state built on another backend saves as it is.
    if "torch" in backends.available():
        with ember.using_backend("torch"):
            model = ember.Sequential([ember.Input((2,)), layers.Dense(2, name="d")])
            state = model.build(seed=0)
        model.save_weights(tmp_path / "foreign.h5")  # active backend: numpy
        with CheckpointReader(tmp_path / "foreign.h5") as ckpt:
            assert ckpt.attrs["backend"] == "torch"
        fresh = ember.Sequential([ember.Input((2,)), layers.Dense(2, name="d")])
        fresh.load_weights(tmp_path / "foreign.h5")
        assert_trees_bit_equal(to_numpy_tree(fresh.state), to_numpy_tree(state))

    with pytest.raises(ValueError, match="contain no '/'"):
        fmt.flatten_tree({"a/b": 1})
    with pytest.raises(TypeError, match="keys must be strings"):
        fmt.flatten_tree({1: 1})
    assert fmt.unflatten_tree({"x/0": 1, "x/1": 2}, {"x": "list"}) == {"x": [1, 2]}
