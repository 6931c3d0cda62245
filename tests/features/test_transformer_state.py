"""Fitted transformers as pytrees of their state: config round trips, moving state across
backends, accepted input types, immutability."""

from __future__ import annotations

import json

import numpy as np
import optree
import pytest

import ember
from ember import backends, features, ops, serialization
from tests.helpers import assert_close

X = (np.random.default_rng(0).normal(size=(40, 5)) * [1, 2, 3, 4, 5] + 1).astype(np.float32)


def _fitted():
    return [
        features.PCA(3, whiten=True).fit(X),
        features.StandardScaler(with_mean=False).fit(X),
        features.MinMaxScaler(feature_range=(-2, 2), clip=True).fit(X),
        features.Normalizer(norm="l1").fit(X),
    ]


def test_pytree_children_are_the_fitted_arrays(backend):
    for transformer in _fitted():
        leaves, treedef = optree.tree_flatten(transformer, namespace="ember")
        state = transformer.state
        assert len(leaves) == len(state)
        assert all(ops.is_array(leaf) for leaf in leaves)
        paths = optree.tree_paths(transformer, namespace="ember")
        assert sorted(path[0] for path in paths) == sorted(state)
        rebuilt = optree.tree_unflatten(treedef, leaves)
        assert type(rebuilt) is type(transformer) and rebuilt.get_config() == transformer.get_config()
        assert_close(rebuilt.transform(X), ops.to_numpy(transformer.transform(X)), rtol=0, atol=0)
        # tree_map builds a new transformer with transformed leaves (e.g. NumPy copies for saving).
        as_numpy = optree.tree_map(ops.to_numpy, transformer, namespace="ember")
        assert all(isinstance(leaf, np.ndarray) for leaf in optree.tree_leaves(as_numpy, namespace="ember"))
        unfitted = type(transformer).from_config(transformer.get_config())
        assert optree.tree_leaves(unfitted, namespace="ember") == []


def test_config_serializes_by_registered_name(backend):
    for transformer in _fitted():
        data = json.loads(json.dumps(serialization.serialize(transformer)))
        assert data["class_name"] == f"ember>{type(transformer).__name__}"
        clone = serialization.deserialize(data)
        assert clone.get_config() == transformer.get_config() and not clone.is_fitted


def test_state_moves_between_backends(backend):
    """Fit on NumPy, save the state as NumPy arrays, load it into a fresh transformer on each
    backend: same results, returned as that backend's native arrays."""
    with ember.using_backend("numpy"):
        fitted = _fitted()
        expected = [ops.to_numpy(t.transform(X)) for t in fitted]
        saved = [({k: ops.to_numpy(v) for k, v in t.state.items()}, t.get_config(), type(t)) for t in fitted]
    for (state, config, cls), want in zip(saved, expected):
        loaded = cls.from_config(config)
        loaded.state = state
        got = loaded.transform(X)
        assert ops.is_array(got)
        assert_close(got, want, rtol=1e-5, atol=1e-5)
    # A transformer fitted on the NumPy backend also works directly after a switch.
    assert_close(fitted[0].transform(X), expected[0], rtol=1e-5, atol=1e-5)
    assert ops.is_array(fitted[0].components_)


@pytest.mark.parametrize("kind", ["numpy", "list", "native", "tensor"])
def test_accepts_numpy_native_and_tensors(backend, kind):
    data = {"numpy": X, "list": X.tolist(), "native": ops.convert_to_tensor(X),
            "tensor": ember.convert_to_tensor(X)}[kind]
    pca = features.PCA(2).fit(data)
    out = pca.transform(data)
    assert ops.is_array(out) and ops.dtype(out) == "float32"
    assert_close(out, ops.to_numpy(features.PCA(2).fit(X).transform(X)), rtol=1e-5, atol=1e-5)
    assert ops.is_array(features.standardize(data)) and ops.is_array(features.one_hot([1], 2))


def test_input_dtypes(backend):
    ints = (X * 10).astype(np.int32)
    assert ops.dtype(features.StandardScaler().fit_transform(ints)) == "float32"
    assert ops.dtype(features.MinMaxScaler().fit_transform(X.astype(np.float16))) == "float32"


def test_mlx_float64_on_gpu_is_computed_in_float32(mlx_backend, monkeypatch):
    # This machine's MLX runs on the CPU; pretend the default device is the GPU.
    monkeypatch.setattr(ops, "get_device", lambda x=None: "gpu")
    assert ops.dtype(features.PCA(2).fit(X.astype(np.float64)).components_) == "float32"
    monkeypatch.undo()
    assert ops.dtype(features.PCA(2).fit(X.astype(np.float64)).components_) == "float64"


def test_immutable_config_and_validated_state(backend):
    pca = features.PCA(2).fit(X)
    with pytest.raises(AttributeError, match=r"PCA is immutable: create a new one with transformer.replace"):
        pca.n_components = 3
    replaced = pca.replace(n_components=3)
    assert replaced.n_components == 3 and not replaced.is_fitted and pca.n_components_ == 2
    with pytest.raises(ValueError, match=r"PCA: state needs the keys .* missing \['mean_'\]"):
        pca.state = {k: v for k, v in pca.state.items() if k != "mean_"}
    with pytest.raises(TypeError, match="state must be a dict"):
        pca.state = [1, 2]
    assert pca.n_components_ == 2  # failed assignments changed nothing
    pca.state = None
    assert not pca.is_fitted
    with pytest.raises(TypeError, match="unknown field"):
        pca.replace(n_comps=1)


def test_foreign_arrays_are_type_errors(backend):
    others = [name for name in ("numpy", "torch", "mlx") if name != backend and backends.is_installed(name)]
    for other in others:
        if other == "numpy":
            continue  # NumPy arrays are accepted by every backend
        with ember.using_backend(other):
            foreign = ops.convert_to_tensor(X)
        with pytest.raises(TypeError, match="PCA.fit"):
            features.PCA(2).fit(foreign)
