"""Loading retains nothing after it returns, without a garbage collection: no reference cycle keeps
the arrays read from the file (or the weights they replace) alive."""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.saving import _arrays
from ember.saving import format as fmt
from ember.saving import reader as reader_module


def _model():
    model = ember.Sequential([ember.Input((4,)), layers.Dense(6, name="hidden"), layers.Dense(3, name="logits")])
    model.build(seed=0)
    return model


@contextlib.contextmanager
def _no_collection():
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _record_read_arrays(monkeypatch) -> list:
    """Weak references to every array the checkpoint reader returns."""
    refs = []
    arrays = reader_module.CheckpointReader.arrays

    def recording(self, prefix, *args, **kwargs):
        out = arrays(self, prefix, *args, **kwargs)
        refs.extend(weakref.ref(value) for value in out.values())
        return out

    monkeypatch.setattr(reader_module.CheckpointReader, "arrays", recording)
    return refs


def _alive_outside(refs: list, state: dict) -> list:
    """The recorded arrays still alive that are not the memory of one of ``state``'s arrays (torch
    wraps a NumPy array's memory without a copy: that array lives on as the tensor's storage)."""
    hosts = [_arrays.to_host(leaf)[0] for leaf in optree.tree_leaves(state)]
    return [ref() for ref in refs
            if ref() is not None and not any(np.shares_memory(ref(), host) for host in hosts)]


@pytest.mark.parametrize("load", ["load_model", "load_weights"])
def test_loading_keeps_no_array_alive_after_return(backend, tmp_path, monkeypatch, load):
    path = tmp_path / "model.h5"
    _model().save(path)
    target = _model()
    old = [weakref.ref(leaf) for leaf in optree.tree_leaves(target.state)]
    refs = _record_read_arrays(monkeypatch)
    with _no_collection():
        if load == "load_model":
            loaded = ember.load_model(path)
        else:
            target.load_weights(path)
            loaded = target
        assert refs
        assert _alive_outside(refs, loaded.state) == []  # the arrays read: freed, or the model's own
        if load == "load_weights":
            assert [ref for ref in old if ref() is not None] == []  # the replaced weights: freed
    expected = _model().state
    for got, want in zip(optree.tree_leaves(loaded.state), optree.tree_leaves(expected)):
        np.testing.assert_array_equal(ops.to_numpy(got), ops.to_numpy(want))


def test_flatten_and_unflatten_keep_no_leaf_alive():
    tree = {"a": {"w": np.zeros(3)}, "b": [np.ones(2), np.ones(1)]}
    lists: dict = {}
    with _no_collection():
        flat = fmt.flatten_tree(tree, "", lists)
        rebuilt = fmt.unflatten_tree(dict(flat), lists)
        refs = [weakref.ref(leaf) for _, leaf in flat]
        del flat, rebuilt, tree
        assert [ref for ref in refs if ref() is not None] == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reader_reads_into_the_active_backends_arrays(backend, tmp_path, dtype, torch_on_cpu):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(6, name="hidden", dtype=dtype)])
    model.build(seed=0)
    path = tmp_path / "weights.h5"
    model.save_weights(path)
    with reader_module.CheckpointReader(path) as reader:
        plain = reader.arrays(fmt.STATE)
        native = reader.arrays(fmt.STATE, _arrays.host_writable)
    assert plain.keys() == native.keys()
    for key, value in native.items():
        if dtype == "bfloat16":  # stored as its bits: read through NumPy, then converted
            assert isinstance(value, np.ndarray)
        else:
            assert ops.is_array(value)  # the active backend's own array, filled in place
        np.testing.assert_array_equal(np.asarray(ops.to_numpy(ops.convert_to_tensor(value)), "float32"),
                                      np.asarray(plain[key], "float32"))
    loaded = ember.Sequential([ember.Input((4,)), layers.Dense(6, name="hidden", dtype=dtype)])
    loaded.build(seed=1)
    loaded.load_weights(path)
    for got, want in zip(optree.tree_leaves(loaded.state), optree.tree_leaves(model.state)):
        assert ops.dtype(got) == dtype
        np.testing.assert_array_equal(np.asarray(ops.to_numpy(got), "float32"),
                                      np.asarray(ops.to_numpy(want), "float32"))
