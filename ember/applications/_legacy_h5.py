"""Keras's legacy HDF5 weights (``model.save("m.h5")``, tf.keras's ``save_weights("m.h5")``, the ImageNet files).

Such a file lists its layers in ``layer_names`` (at the top, or under ``model_weights`` for a whole
saved model), each with its arrays in ``weight_names`` order: a layer's trainable weights, then its
non-trainable ones. As Keras does (``load_weights_from_hdf5_group``), the layers that hold weights
are matched by position with the model's layers that hold weights, in Keras's layer order; within a
layer the arrays follow Keras's variable order (:mod:`ember.saving.keras_format.weights_layout`).
``h5py`` is imported when a file is read (as for every checkpoint).

Example:
    >>> import os, tempfile
    >>> from ember.applications import _legacy_h5
    >>> path = os.path.join(tempfile.mkdtemp(), "empty.h5")
    >>> _legacy_h5.is_legacy_h5(path)
    False
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ember.saving.format import CheckpointError
from ember.saving.keras_format.weights_layout import model_paths
from ember.saving.weights import match_state, state_template

LAYER_NAMES = "layer_names"
WEIGHT_NAMES = "weight_names"
MODEL_WEIGHTS = "model_weights"


def _strings(values: Any) -> list[str]:
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]


def _weights_group(handle: Any) -> Any:
    if LAYER_NAMES in handle.attrs:
        return handle
    if MODEL_WEIGHTS in handle and LAYER_NAMES in handle[MODEL_WEIGHTS].attrs:
        return handle[MODEL_WEIGHTS]
    return None


def is_legacy_h5(path: Any) -> bool:
    """Whether ``path`` is an HDF5 file in Keras's legacy weights layout."""
    import h5py

    try:
        if not os.path.isfile(os.fspath(path)):
            return False
        with h5py.File(os.fspath(path), "r") as handle:
            return _weights_group(handle) is not None
    except (OSError, TypeError):
        return False


def _model_layers(model: Any) -> list[list[str]]:
    """The Ember state paths of each of the model's layers that hold weights, in Keras's legacy order."""
    layers: dict[str, list[str]] = {}
    for keras_path, ember_path in model_paths(model, model.placeholder_state()):
        layers.setdefault(keras_path.split("/")[1], []).append(ember_path)
    # Keras lists a layer's trainable weights, then its non-trainable ones (a stable sort keeps each kind's order)
    return [sorted(paths, key=lambda p: not p.startswith("params/")) for paths in layers.values()]


def load_legacy_h5(model: Any, path: Any) -> None:
    """Replace ``model.state`` with the weights of a legacy Keras ``.h5`` file.

    Raises:
        CheckpointError: the file's layers or weights do not match the model (nothing is changed).
    """
    import h5py

    path = os.fspath(path)
    targets = _model_layers(model)
    arrays: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as handle:
        group = _weights_group(handle)
        stored = [(name, _strings(group[name].attrs.get(WEIGHT_NAMES, [])))
                  for name in _strings(group.attrs[LAYER_NAMES])]
        stored = [(name, weights) for name, weights in stored if weights]
        if len(stored) != len(targets):
            raise CheckpointError(path, f"legacy Keras weights: the file has {len(stored)} layers with weights, the "
                                        f"model {model.name!r} has {len(targets)}: build the same architecture")
        for (name, weights), paths in zip(stored, targets):
            if len(weights) != len(paths):
                raise CheckpointError(path, f"legacy Keras weights: layer {name!r} of the file has {len(weights)} "
                                            f"weights, the model's layer at that position has {len(paths)} "
                                            f"({', '.join(paths)})")
            for weight, ember_path in zip(weights, paths):
                arrays[ember_path] = np.asarray(group[name][weight])
    state, _ = match_state(state_template(model, "load_weights"), arrays, path, skip_mismatch=False)
    model.state = state
