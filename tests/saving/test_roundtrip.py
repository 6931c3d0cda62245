"""Save on every backend, load on every backend (all pairs): same weights (bits and dtypes), same
buffers, bit-equal predictions, for ``save``/``load_model`` and ``save_weights``/``load_weights``.

The reference for a pair (A -> B) is independent of the file: the state A saved, converted
directly from NumPy to B's arrays and run through a model built in code on B.
"""

from __future__ import annotations

import h5py
import numpy as np
import optree

import ember
from ember import backends, ops
from ember.saving import reader as reader_module
from tests.saving.models import assert_trees_bit_equal, build_state, make_model, predictions, to_numpy_tree

X = np.linspace(-1.0, 1.0, 3 * 4, dtype=np.float32).reshape(3, 4)


def _save_everywhere(tmp_path):
    saved = {}
    for source in backends.available():
        with ember.using_backend(source):
            model = make_model()
            state = build_state(model, seed=3)
            model.save(tmp_path / f"{source}.h5")
            model.save_weights(tmp_path / f"{source}.weights.h5")
            saved[source] = to_numpy_tree(state)
    return saved


def _reference_predictions(state_np):
    model = make_model()
    model.state = optree.tree_map(lambda a: ops.convert_to_tensor(a), state_np)
    return predictions(model, X)


def test_every_backend_pair_loads_identical_models(tmp_path):
    saved = _save_everywhere(tmp_path)
    pairs = 0
    for target in backends.available():
        with ember.using_backend(target):
            for source, state_np in saved.items():
                expected = _reference_predictions(state_np)
                loaded = ember.load_model(tmp_path / f"{source}.h5")
                assert type(loaded) is ember.Model and loaded.name == "mixed"
                for leaf in optree.tree_leaves(loaded.state):
                    assert ops.is_array(leaf), f"{source}->{target}: a leaf is not a {target} array"
                assert_trees_bit_equal(to_numpy_tree(loaded.state), state_np)
                for got, want in zip(predictions(loaded, X), expected):
                    assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), f"{source}->{target}"

                fresh = make_model()
                report = fresh.load_weights(tmp_path / f"{source}.weights.h5")
                assert not report.skipped and len(report.loaded) == len(optree.tree_leaves(state_np))
                assert_trees_bit_equal(to_numpy_tree(fresh.state), state_np)
                for got, want in zip(predictions(fresh, X), expected):
                    assert got.tobytes() == want.tobytes(), f"weights {source}->{target}"
                pairs += 1
    assert pairs == len(backends.available()) ** 2


def test_file_records_metadata_dtypes_and_backend(tmp_path):
    saved = _save_everywhere(tmp_path)
    for source in saved:
        with h5py.File(tmp_path / f"{source}.h5", "r") as file:
            assert file.attrs["ember_format"] == "ember.checkpoint"
            assert int(file.attrs["format_version"]) == 2
            assert file.attrs["backend"] == source
            assert file.attrs["device"] == "cpu"
            assert file.attrs["kind"] == "model"
            np.datetime64(file.attrs["created"].replace("+00:00", ""))  # ISO 8601
            bf16 = file["state/params/bf16/kernel"]
            assert bf16.attrs["dtype"] == "bfloat16" and bf16.dtype == np.uint16  # raw bits, marked
            assert bf16.attrs["backend"] == source
            assert file["state/params/f64/kernel"].attrs["dtype"] == "float64"
            assert file["state/buffers/gate/keep"].attrs["dtype"] == "bool"
            assert file["state/buffers/gate/offset"].attrs["dtype"] == "int32"
        with reader_module.CheckpointReader(tmp_path / f"{source}.h5") as ckpt:
            dtypes = {path: dtype for path, _, dtype in ckpt.variables("state")}
            assert ckpt.document("config")["class_name"] == "ember>Model"
    assert dtypes["params/f16/kernel"] == "float16"
    assert dtypes["params/bf16/bias"] == "bfloat16"
    assert dtypes["params/f32/kernel"] == "float32"


def test_bfloat16_is_stored_losslessly(tmp_path):
    import ml_dtypes

    from ember.saving.writer import write_checkpoint

    bits = np.arange(0, 65536, 7, dtype=np.uint16)  # every 7th bit pattern, NaNs and infinities included
    values = bits.view(ml_dtypes.bfloat16)
    write_checkpoint(tmp_path / "bf.h5", "weights", trees={"state": {"params": {"w": values}}})
    with reader_module.CheckpointReader(tmp_path / "bf.h5") as ckpt:
        back = ckpt.arrays("state")["params/w"]
    assert back.dtype == values.dtype and back.view(np.uint16).tobytes() == bits.tobytes()


def test_unbuilt_model_round_trips_without_weights(tmp_path):
    model = ember.Sequential([ember.layers.Dense(2, name="d")], name="lazy")
    model.save(tmp_path / "lazy.h5")
    loaded = ember.load_model(tmp_path / "lazy.h5")
    assert loaded.state is None and [layer.name for layer in loaded.layers] == ["d"]


def test_sequential_with_build_shape_and_nested_model(tmp_path, backend):
    inner = ember.Sequential([ember.Input((3,)), ember.layers.Dense(4, name="inner_dense")], name="inner")
    x = ember.Input((3,), name="inp")
    out = ember.layers.Dense(2, name="head")(inner(x))
    model = ember.Model(x, out, name="outer")
    model.build(seed=1)
    model.save(tmp_path / "nested.h5")
    loaded = ember.load_model(tmp_path / "nested.h5")
    assert_trees_bit_equal(to_numpy_tree(loaded.state), to_numpy_tree(model.state))
    data = np.ones((2, 3), np.float32)
    assert np.array_equal(ops.to_numpy(loaded(data)), ops.to_numpy(model(data)))

    seq = ember.Sequential([ember.layers.Dense(3, name="a"), ember.layers.Dense(1, name="b")], name="s")
    seq.build((None, 5), seed=0)
    seq.save(tmp_path / "seq.h5")
    back = ember.load_model(tmp_path / "seq.h5")
    assert_trees_bit_equal(to_numpy_tree(back.state), to_numpy_tree(seq.state))


def _rich_model():
    layers = ember.layers
    inp = ember.Input((6, 8, 3), name="image")
    x = layers.Conv2D(4, 3, padding="same", name="conv")(inp)
    x = layers.SeparableConv2D(4, 3, name="sep")(x)
    x = layers.BatchNormalization(name="bn")(x)
    x = layers.Reshape((4, 24), name="rows")(x)
    x = layers.LSTM(5, return_sequences=True, name="lstm")(x)
    x = layers.Bidirectional(layers.GRU(3, return_sequences=True, name="gru"), name="bi")(x)
    x = layers.MultiHeadAttention(2, 4, name="mha")(x, x)
    x = layers.LayerNormalization(name="ln")(x)
    x = layers.Flatten(name="flat")(x)
    return ember.Model(inp, layers.Dense(2, name="head")(x), name="rich")


def test_rich_architecture_round_trips_across_backends(tmp_path):
    data = np.linspace(-1, 1, 2 * 6 * 8 * 3, dtype=np.float32).reshape(2, 6, 8, 3)
    with ember.using_backend("numpy"):
        model = _rich_model()
        model.build(seed=0)
        model.save(tmp_path / "rich.h5")
        state_np = to_numpy_tree(model.state)
    for target in backends.available():
        with ember.using_backend(target):
            loaded = ember.load_model(tmp_path / "rich.h5")
            assert_trees_bit_equal(to_numpy_tree(loaded.state), state_np)
            reference = _rich_model()
            reference.state = optree.tree_map(lambda a: ops.convert_to_tensor(a), state_np)
            assert ops.to_numpy(loaded(data)).tobytes() == ops.to_numpy(reference(data)).tobytes()
