"""``save_weights``/``load_weights``: matching by state path, mismatch errors and ``skip_mismatch``."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.saving import CheckpointError, LoadReport
from tests.saving.models import assert_trees_bit_equal, to_numpy_tree


def _mlp(hidden=4, extra=False, name="mlp"):
    stack = [ember.Input((3,)), layers.Dense(hidden, name="hidden"), layers.Dense(2, name="out")]
    if extra:
        stack.append(layers.Dense(2, name="extra"))
    return ember.Sequential(stack, name=name)


def test_load_weights_round_trip_on_every_backend(tmp_path, backend):
    model = _mlp()
    model.build(seed=0)
    model.save_weights(tmp_path / "w.weights.h5")
    other = _mlp()
    other.build(seed=1)
    report = other.load_weights(tmp_path / "w.weights.h5")
    assert report == LoadReport(loaded=("params/hidden/bias", "params/hidden/kernel", "params/out/bias",
                                        "params/out/kernel"))
    assert_trees_bit_equal(to_numpy_tree(other.state), to_numpy_tree(model.state))


def test_shape_mismatch_raises_listing_every_problem_and_changes_nothing(tmp_path):
    source = _mlp(hidden=4)
    source.build(seed=0)
    source.save_weights(tmp_path / "w.h5")
    target = _mlp(hidden=5, extra=True)
    before = to_numpy_tree(target.build(seed=2))
    with pytest.raises(CheckpointError) as info:
        target.load_weights(tmp_path / "w.h5")
    message = str(info.value)
    assert "w.h5" in message and "nothing was loaded" in message
    assert "params/hidden/kernel (3, 4) vs (3, 5)" in message
    assert "params/hidden/bias (4,) vs (5,)" in message
    assert "params/out/kernel (4, 2) vs (5, 2)" in message
    assert "missing from the file: params/extra/bias, params/extra/kernel" in message
    assert "skip_mismatch=True" in message
    assert_trees_bit_equal(to_numpy_tree(target.state), before)


def test_skip_mismatch_loads_what_matches_and_reports_the_rest(tmp_path):
    source = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="hidden"), layers.Dense(2, name="out"),
                               layers.Dense(1, name="gone")], name="src")
    source.build(seed=0)
    source.save_weights(tmp_path / "w.h5")
    target = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="hidden"), layers.Dense(3, name="out"),
                               layers.Dense(2, name="new")], name="dst")
    before = to_numpy_tree(target.build(seed=5))
    with pytest.warns(UserWarning, match="skipped variables") as caught:
        report = target.load_weights(tmp_path / "w.h5", skip_mismatch=True)
    assert report.skipped
    assert report.loaded == ("params/hidden/bias", "params/hidden/kernel")
    assert report.mismatched == (("params/out/bias", (2,), (3,)), ("params/out/kernel", (4, 2), (4, 3)))
    assert report.missing == ("params/new/bias", "params/new/kernel")
    assert report.unexpected == ("params/gone/bias", "params/gone/kernel")
    assert "params/out/kernel (4, 2) vs (4, 3)" in str(caught[0].message)
    after = to_numpy_tree(target.state)
    assert_trees_bit_equal(after["params"]["hidden"], to_numpy_tree(source.state)["params"]["hidden"])
    assert_trees_bit_equal(after["params"]["out"], before["params"]["out"])
    assert_trees_bit_equal(after["params"]["new"], before["params"]["new"])


def test_unexpected_variables_raise(tmp_path):
    source = _mlp(extra=True)
    source.build(seed=0)
    source.save_weights(tmp_path / "w.h5")
    target = _mlp()
    target.build(seed=0)
    with pytest.raises(CheckpointError, match="in the file that the model does not have: params/extra/bias"):
        target.load_weights(tmp_path / "w.h5")


def test_unbuilt_model_is_built_from_the_file(tmp_path, backend):
    source = _mlp()
    source.build(seed=0)
    source.save_weights(tmp_path / "w.h5")
    target = _mlp()
    assert target.state is None
    target.load_weights(tmp_path / "w.h5")
    assert_trees_bit_equal(to_numpy_tree(target.state), to_numpy_tree(source.state))
    # A model that cannot build itself says what to do.
    lazy = ember.Sequential([layers.Dense(4, name="hidden"), layers.Dense(2, name="out")])
    with pytest.raises(ValueError, match="not built"):
        lazy.load_weights(tmp_path / "w.h5")
    assert lazy.state is None


def test_load_weights_casts_to_the_model_dtype(tmp_path):
    source = ember.Sequential([ember.Input((2,)), layers.Dense(2, name="d")])
    source.build(seed=0)
    source.save_weights(tmp_path / "w.h5")
    target = ember.Sequential([ember.Input((2,)), layers.Dense(2, name="d", dtype="float64")])
    target.load_weights(tmp_path / "w.h5")
    kernel = target.state["params"]["d"]["kernel"]
    assert ops.dtype(kernel) == "float64"
    np.testing.assert_array_equal(ops.to_numpy(kernel), ops.to_numpy(source.state["params"]["d"]["kernel"]))


def test_weights_from_a_full_model_file_and_kind_errors(tmp_path):
    model = _mlp()
    model.build(seed=0)
    model.save(tmp_path / "model.h5")
    model.save_weights(tmp_path / "w.h5")
    other = _mlp()
    other.load_weights(tmp_path / "model.h5")
    assert_trees_bit_equal(to_numpy_tree(other.state), to_numpy_tree(model.state))
    with pytest.raises(CheckpointError, match="only weights.*load_weights"):
        ember.load_model(tmp_path / "w.h5")


def test_save_weights_arguments(tmp_path):
    model = _mlp()
    with pytest.raises(ValueError, match="must end with '.h5'"):
        model.save_weights(tmp_path / "w.keras")
    assert model.state is None  # a failing save changes nothing
    with pytest.raises(ValueError, match="no weights yet"):  # no input shape to build from
        ember.Sequential([layers.Dense(2)]).save_weights(tmp_path / "w.h5")
    model.build(seed=0)
    with pytest.raises(ValueError, match="must end with '.h5'"):
        model.save_weights(tmp_path / "w.keras")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save_weights(tmp_path / "missing_dir" / "w.h5")
    model.save_weights(tmp_path / "w.h5")
    with pytest.raises(FileExistsError, match="overwrite=False"):
        model.save_weights(tmp_path / "w.h5", overwrite=False)
    with pytest.raises(FileNotFoundError, match="no such file"):
        model.load_weights(tmp_path / "nope.h5")
    assert sorted(os.listdir(tmp_path)) == ["w.h5"]  # no temporary files left behind
