"""Read and write Keras 3 weights files (``model.weights.h5``, standalone ``*.weights.h5``).

The Keras dataset for each Ember variable comes from
:func:`ember.saving.keras_format.weights_layout.model_paths`; the arrays are matched to the
model with the same checks as Ember's own checkpoints (every variable present, shapes equal,
nothing left over, else an error naming them and nothing is changed). ``load_weights`` reads
the model's variables only; the optimizer variables (``optimizer/vars/...``) are read by
``load_model`` with the compile configuration (:mod:`ember.saving.keras_format.compile_bridge`),
and written here for a compiled model whose optimizer state maps, as Keras's ``save_weights`` does.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> from ember.saving.keras_format import keras_weights
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")])
    >>> _ = model.build(seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "m.weights.h5")
    >>> keras_weights.save_keras_weights(model, path)
    >>> keras_weights.is_keras_weights_file(path)
    True
    >>> other = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="other")])
    >>> _ = keras_weights.load_keras_weights(other, path)
    >>> bool(np.array_equal(other.state["params"]["other"]["kernel"], model.state["params"]["d"]["kernel"]))
    True
"""

from __future__ import annotations

import io
import os
import stat
import warnings
from typing import Any

import numpy as np

from ember import ops
from ember.saving import _arrays
from ember.saving.format import CheckpointError, check_regular_file
from ember.saving.keras_format.compile_bridge import keras_optimizer
from ember.saving.keras_format.objects import KerasFormatError
from ember.saving.keras_format.weights_layout import carried_state_paths, lora_layers, model_paths
from ember.saving.weights import LoadReport, match_state, state_template
from ember.saving.writer import atomic_path

KERAS_OPTIMIZER_GROUP = "optimizer"
# dtypes a Keras weights file holds as themselves (bfloat16 has no HDF5 type Keras reads back).
PORTABLE_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


def is_keras_weights_file(path: Any) -> bool:
    """Whether ``path`` is an HDF5 file in Keras 3's weights layout (no Ember checkpoint marker)."""
    import h5py

    try:
        if not stat.S_ISREG(os.stat(os.fspath(path)).st_mode):
            return False  # never open a FIFO or device (it blocks): the Ember reader refuses it by name
        with h5py.File(os.fspath(path), "r") as handle:
            return "ember_format" not in handle.attrs and ("layers" in handle or "vars" in handle)
    except (OSError, TypeError):
        return False


def _datasets(group: Any, prefix: str = "") -> dict[str, Any]:
    import h5py

    found = {}
    for key, item in group.items():
        path = f"{prefix}{key}"
        if isinstance(item, h5py.Dataset):
            found[path] = item
        elif not path.startswith(KERAS_OPTIMIZER_GROUP):
            found.update(_datasets(item, path + "/"))
    return found


def read_arrays(model: Any, handle: Any, label: str, skip_mismatch: bool) -> tuple[dict, LoadReport]:
    """The model's new state from an open Keras weights file (the model is not changed).

    Raises:
        CheckpointError: missing, unexpected or mismatched variables (and not ``skip_mismatch``).
    """
    template = state_template(model, "load_weights", initialize=skip_mismatch)
    placeholder = model.placeholder_state()
    pairs = model_paths(model, placeholder)
    stored = _datasets(handle)
    arrays, missing = {}, []
    for ember_path in carried_state_paths(model):  # stateful RNNs start from zero states, as in Keras
        node = placeholder
        for key in ember_path.split("/"):
            node = node[key]
        arrays[ember_path] = np.asarray(ops.to_numpy(node))  # the placeholder state holds zeros
    for layer, prefix in lora_layers(model):  # Keras loads LoRA factors as zeros (the kernel is merged)
        for name in layer._lora_names():
            node = placeholder["params"]
            for key in f"{prefix}/{name}".split("/"):
                node = node[key]
            arrays[f"params/{prefix}/{name}"] = np.zeros(ops.shape(node), ops.dtype(node))
    for keras_path, ember_path in pairs:
        if keras_path in stored:
            arrays[ember_path] = np.asarray(stored.pop(keras_path)[()])
        else:
            missing.append(f"{keras_path} (for {ember_path})")
    if (missing or stored) and not skip_mismatch:
        raise CheckpointError(label, "the Keras weights do not match the model, nothing was loaded:"
                              + (f"\n  missing in the file: {missing}" if missing else "")
                              + (f"\n  in the file but not in the model: {sorted(stored)}" if stored else "")
                              + "\n(Keras matches layers by class and order: build the same architecture; "
                              "skip_mismatch=True loads what matches)")
    return match_state(template, arrays, label, skip_mismatch)


def load_keras_weights(model: Any, filepath: Any, skip_mismatch: bool = False) -> LoadReport:
    """Replace ``model.state`` with the weights of a Keras 3 ``.weights.h5`` file.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: the file is not in Keras's layout or does not match the model.
    """
    import h5py

    path = os.fspath(filepath)
    check_regular_file(path, "load_weights")
    try:
        with h5py.File(path, "r") as handle:
            state, report = read_arrays(model, handle, path, skip_mismatch)
    except (OSError, RuntimeError, KeyError) as error:  # h5py's errors on a truncated or damaged file
        raise CheckpointError(path, f"the Keras weights file is truncated or corrupted ({type(error).__name__}: "
                                    f"{error}); nothing was loaded") from None
    model.state = state
    if report.skipped:
        warnings.warn(f"load_weights({path!r}): skipped variables that do not match the model:\n"
                      f"{report.describe()}", UserWarning, stacklevel=3)
    return report


def host_arrays(model: Any) -> list[tuple[str, np.ndarray]]:
    """``(keras path, host array)`` for every variable of a built model.

    Raises:
        ValueError: the model is not built.
        KerasFormatError: a variable's dtype has no Keras file representation (bfloat16).
    """
    if model.state is None:
        raise ValueError(f"the model {model.name!r} has no weights yet: build it, call it on data or fit it first")
    flat: dict[str, Any] = {}
    for kind in ("params", "buffers"):
        _flatten(model.state[kind], kind, flat)
    for layer, prefix in lora_layers(model):  # Keras's save_own_variables: the merged kernel
        own = {kind: _subtree(model.state[kind], prefix) for kind in ("params", "buffers")}
        for kind, tree in layer.merged_state(own).items():
            _flatten(tree, f"{kind}/{prefix}", flat)
    pairs = []
    for keras_path, ember_path in model_paths(model, model.state):
        host, _, _ = _arrays.to_host(flat[ember_path])
        dtype = _arrays.info(flat[ember_path])[1]
        if dtype not in PORTABLE_DTYPES:
            raise KerasFormatError(f"variable {ember_path} is {dtype}, which a .keras file cannot carry: cast the "
                                   "model to float32 first, or use Ember's .h5 format")
        pairs.append((keras_path, np.asarray(host)))
    return pairs


def _subtree(tree: dict, prefix: str) -> dict:
    for key in prefix.split("/"):
        tree = tree.get(key, {})
    return tree


def _flatten(tree: dict, prefix: str, out: dict) -> None:
    for key, value in tree.items():
        path = f"{prefix}/{key}"
        if isinstance(value, dict):
            _flatten(value, path, out)
        else:
            out[path] = value


def write_h5(model: Any, target: Any, optimizer: tuple[str, list] | None = None) -> None:
    """Write the Keras weights layout of ``model`` to ``target`` (a path or a binary file object),
    with ``optimizer = (name, [arrays in Keras's order])`` under ``optimizer/vars`` when given."""
    import h5py

    pairs = host_arrays(model)
    with h5py.File(target, "w") as handle:
        handle.create_group("layers")
        handle.create_group("vars").attrs["name"] = model.name
        for keras_path, array in pairs:
            handle.create_dataset(keras_path, data=array)
        if optimizer is not None:
            name, arrays = optimizer
            group = handle.create_group(f"{KERAS_OPTIMIZER_GROUP}/vars")
            group.attrs["name"] = name
            for index, array in enumerate(arrays):
                group.create_dataset(str(index), data=array)


def h5_bytes(model: Any, optimizer: tuple[str, list] | None = None) -> bytes:
    """The Keras weights file of ``model`` as bytes (for a ``.keras`` archive)."""
    buffer = io.BytesIO()
    write_h5(model, buffer, optimizer)
    return buffer.getvalue()


def save_keras_weights(model: Any, filepath: Any, overwrite: bool = True) -> None:
    """Write ``model``'s weights as a Keras 3 ``.weights.h5`` file (atomically); a compiled model's
    optimizer variables go with them where they map (as Keras's ``save_weights`` writes them).

    Raises:
        ValueError: the path does not end with ``.weights.h5``, or the model is not built.
        FileExistsError: the file exists and ``overwrite`` is False.
    """
    path = os.fspath(filepath)
    if not path.endswith(".weights.h5"):
        raise ValueError(f"save_weights(format='keras'): Keras weights files end with '.weights.h5', "
                         f"received {path!r}")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save_weights: {path!r} exists and overwrite=False")
    data = h5_bytes(model, keras_optimizer(model))
    with atomic_path(path) as temporary, open(temporary, "wb") as handle:
        handle.write(data)
